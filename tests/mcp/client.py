"""A second, independent MCP client (the Python SDK) for `switchboard mcp`.

Usage: client.py SWITCHBOARD ROOT AGENT PROMPT. Starts `switchboard --root ROOT mcp --agent AGENT`,
lists the tools, calls AGENT's tool and prints one JSON object: the tool names, the result's text,
its structured content and whether it is an error.
"""
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(binary, root, agent, prompt):
    params = StdioServerParameters(command=binary, args=["--root", root, "mcp", "--agent", agent])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool(agent, {"prompt": prompt})
            print(json.dumps({
                "tools": [t.name for t in tools.tools],
                "text": "\n".join(c.text for c in result.content if c.type == "text"),
                "structured": result.structuredContent,
                "is_error": result.isError,
            }))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
