import { sign, verify } from "jose";

export const TOKEN_LIFETIME_SECONDS = 24 * 60 * 60;

export async function issue(subject: string, key: CryptoKey): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return sign({
        sub: subject,
        iat: now,
        exp: now + TOKEN_LIFETIME_SECONDS,
    }, key);
}

export async function check(token: string, key: CryptoKey) {
	return verify(token, key);
}
