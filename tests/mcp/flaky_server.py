"""A stdio MCP server (Python SDK) that dies mid-call, for switchboard's restart test.

`flaky` exits the process the first time (leaving a marker file in the working directory) and
answers once restarted, and appends a line to flaky.calls on every call (its side effect); `die` always exits; `slow` hangs; `reject` answers with a JSON-RPC error.
"""
import asyncio
import os
import sys

from mcp.server.fastmcp import FastMCP
from mcp.shared.exceptions import UrlElicitationRequiredError

server = FastMCP("flaky")
MARKER = "flaky.marker"


@server.tool()
def flaky() -> str:
    """Dies the first time, answers after a restart; counts its calls in flaky.calls."""
    with open("flaky.calls", "a") as f:
        f.write("call\n")
    if not os.path.exists(MARKER):
        open(MARKER, "w").close()
        os._exit(3)
    return "alive after restart"


@server.tool()
async def slow() -> str:
    """Hangs far past any call limit (without blocking the server's other calls)."""
    await asyncio.sleep(60)
    return "too late"


@server.tool()
def reject() -> str:
    """Answers with a JSON-RPC error (not an `isError` result): the server is fine."""
    raise UrlElicitationRequiredError([], "rejected on purpose")


@server.tool()
def die() -> str:
    """Always dies."""
    sys.stdout.flush()
    os._exit(4)


if __name__ == "__main__":
    server.run("stdio")
