// Tenants by OAuth 2.1 (issue 31.2, 31.7): a real authorization server (npm oidc-provider) on
// loopback issues JWT access tokens for this resource (RFC 8707) by the client credentials grant;
// the official SDK client meets the daemon's 401, reads its Protected Resource Metadata (RFC 9728),
// gets a token from the authorization server and calls as the tenant the token's client_id names.
// Then tokens made to be wrong, each refused with the reason: expired, another audience, another
// issuer, a bad signature, no scope (403), alg none, HMAC keyed with the public key, an unknown
// tenant, an unknown key id. And the JWKS file read again when it changes (a rotated key).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import Provider from 'oidc-provider';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { startHttpDaemon, connectSdk, INIT, mcpPost, rawRequest, until } from './lib/http-daemon.mjs';
import { freePort } from './lib/pydeps.mjs';
import { callTool } from './lib/files.mjs';

const SCOPE = 'mcp-execd';
const b64u = (x) => Buffer.from(typeof x === 'string' ? x : JSON.stringify(x)).toString('base64url');

/** An EC P-256 signing key: {privateJwk, publicJwk, key} with kid. */
function ecKey(kid) {
    const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
    return { kid, key: privateKey,
        privateJwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' },
        publicJwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' } };
}

/** A JWT signed ES256 with k (the test's own signer, to make tokens that are wrong on purpose). */
function jwt(k, claims, header = {}) {
    const h = b64u({ alg: 'ES256', typ: 'at+jwt', kid: k.kid, ...header });
    const p = b64u(claims);
    const sig = crypto.sign('sha256', Buffer.from(`${h}.${p}`), { key: k.key, dsaEncoding: 'ieee-p1363' });
    return `${h}.${p}.${sig.toString('base64url')}`;
}

function writeFile600(t, name, text) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const f = path.join(dir, name);
    fs.writeFileSync(f, text, { mode: 0o600 });
    return f;
}

/** oidc-provider on loopback: a client per tenant (client credentials), JWT access tokens for resource. */
async function authorizationServer(t, key, resource, clients) {
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    const provider = new Provider(issuer, {
        clients: clients.map(([id, secret]) => ({ client_id: id, client_secret: secret, grant_types: ['client_credentials'],
            redirect_uris: [], response_types: [], token_endpoint_auth_method: 'client_secret_basic',
            id_token_signed_response_alg: 'ES256' })),
        jwks: { keys: [key.privateJwk] },
        features: {
            clientCredentials: { enabled: true },
            resourceIndicators: {
                enabled: true,
                defaultResource: () => resource,
                useGrantedResource: () => true,
                getResourceServerInfo: (ctx, indicator) => {
                    if (indicator !== resource) throw new Error(`unknown resource ${indicator}`);
                    return { scope: SCOPE, audience: resource, accessTokenFormat: 'jwt', accessTokenTTL: 300, jwt: { sign: { alg: 'ES256' } } };
                },
            },
        },
    });
    const server = http.createServer(provider.callback());
    await new Promise((r) => server.listen(port, '127.0.0.1', r));
    t.after(() => server.close());
    return { issuer, port };
}

/** The daemon with OAuth: {d, resource, issuer, key, jwksFile}. */
async function oauthSetup(t, { clients = [['alpha', 'alpha-secret'], ['beta', 'beta-secret']], tenants = 'alpha -\nbeta -\n' } = {}) {
    const port = await freePort();
    const resource = `http://127.0.0.1:${port}/mcp`;
    const key = ecKey('k1');
    const as = await authorizationServer(t, key, resource, clients);
    const jwksFile = writeFile600(t, 'jwks.json', JSON.stringify({ keys: [key.publicJwk] }));
    const tenantsFile = writeFile600(t, 'tenants', tenants);
    const d = await startHttpDaemon(t, { port, env: { MCP_EXEC_TENANTS: tenantsFile, MCP_EXEC_OAUTH_ISSUER: as.issuer,
        MCP_EXEC_OAUTH_JWKS: jwksFile, MCP_EXEC_OAUTH_RESOURCE: resource } });
    return { d, resource, issuer: as.issuer, key, jwksFile };
}

test('the SDK client does the whole flow: 401, the metadata, a token by client credentials from oidc-provider, then calls as its tenant', async (t) => {
    const { d, resource, issuer } = await oauthSetup(t);
    // The metadata, without a token.
    const prm = await rawRequest(d, { path: '/.well-known/oauth-protected-resource/mcp' });
    assert.equal(prm.status, 200, prm.body);
    assert.deepEqual(prm.json, { resource, authorization_servers: [issuer], scopes_supported: [SCOPE],
        bearer_methods_supported: ['header'], resource_name: 'mcp-execd' });
    // A 401 names it.
    const r401 = await mcpPost(d, { jsonrpc: '2.0', id: 1, method: 'ping' });
    assert.equal(r401.status, 401);
    assert.equal(r401.headers.get('www-authenticate'),
        `Bearer resource_metadata="http://127.0.0.1:${d.port}/.well-known/oauth-protected-resource/mcp", scope="${SCOPE}"`);
    await r401.text();

    for (const [id, secret] of [['alpha', 'alpha-secret'], ['beta', 'beta-secret']]) {
        const authProvider = new ClientCredentialsProvider({ clientId: id, clientSecret: secret, scope: SCOPE, expectedIssuer: issuer });
        const c = await connectSdk(t, d, 'http', { authProvider });
        const env = await callTool(c, 'check_environment', {});
        assert.equal(env.sc.auth.tenant, id);
        const r = await callTool(c, 'exec', { code: `print("hello ${id}")` });
        assert.equal(r.sc.stdout, `hello ${id}\n`);
        // The token is a JWT for this resource, as the daemon checked it.
        const tok = authProvider.tokens().access_token;
        const claims = JSON.parse(Buffer.from(tok.split('.')[1], 'base64url').toString());
        assert.equal(claims.aud, resource);
        assert.equal(claims.client_id, id);
    }
    assert.ok(await d.waitFor(/ TENANT=alpha( |$)/m, 5000), d.stderr());
    assert.ok(await d.waitFor(/ TENANT=beta( |$)/m, 5000), d.stderr());
});

test('tokens made to be wrong are refused, each with its reason in WWW-Authenticate; the daemon keeps serving', async (t) => {
    const { d, resource, issuer, key } = await oauthSetup(t);
    const now = Math.floor(Date.now() / 1000);
    const good = { iss: issuer, aud: resource, exp: now + 300, iat: now, client_id: 'alpha', scope: SCOPE };
    const other = ecKey('k1'); // same kid, another key: a forged signature
    const pub = key.publicJwk;
    const hmacWithPublic = (() => {
        const h = b64u({ alg: 'HS256', kid: 'k1' });
        const p = b64u(good);
        const mac = crypto.createHmac('sha256', JSON.stringify(pub)).update(`${h}.${p}`).digest('base64url');
        return `${h}.${p}.${mac}`;
    })();
    const cases = [
        [jwt(key, good), 200, null],
        [jwt(key, { ...good, exp: now - 120 }), 401, /the access token has expired/],
        [jwt(key, { ...good, nbf: now + 600 }), 401, /not valid yet/],
        [jwt(key, { ...good, aud: 'http://127.0.0.1:1/mcp' }), 401, /audience \(aud\) is not this server/],
        [jwt(key, { ...good, aud: [resource + 'x'] }), 401, /audience/],
        [jwt(key, { ...good, iss: 'http://evil.example' }), 401, /issuer \(iss\) is not/],
        [jwt(other, good), 401, /signature does not verify/],
        [jwt(key, { ...good, scope: 'openid' }), 403, /lacks the scope/],
        [jwt(key, { ...good, client_id: 'gamma' }), 401, /names no tenant of this server/],
        [jwt(key, good, { kid: 'k2' }), 401, /no key of the authorization server's JWKS/],
        [`${b64u({ alg: 'none' })}.${b64u(good)}.`, 401, /not a JWT|not a JWS|alg is not one/],
        [`${b64u({ alg: 'none' })}.${b64u(good)}.xx`, 401, /not a JWS|alg is not one this server takes/],
        [hmacWithPublic, 401, /alg is not one this server takes/],
        [jwt(key, good).replace(/\.[^.]+\./, `.${b64u({ ...good, client_id: 'beta' })}.`), 401, /signature does not verify/],
        [jwt(key, { ...good, exp: undefined }), 401, /no expiry/],
        [jwt(key, good, { crit: ['exp'] }), 401, /crit/],
    ];
    for (const [tok, status, why] of cases) {
        const r = await mcpPost(d, INIT, { headers: { Authorization: `Bearer ${tok}` } });
        const body = await r.text();
        assert.equal(r.status, status, `${why}: ${r.status} ${body}`);
        if (why) {
            const wa = r.headers.get('www-authenticate');
            assert.match(wa, new RegExp(`error="${status === 403 ? 'insufficient_scope' : 'invalid_token'}"`));
            assert.match(wa, why);
            assert.ok(!body.includes(tok) && !wa.includes(tok), 'the token is echoed');
        }
    }
    assert.equal(d.exit, null);
    // The token's content is never logged.
    assert.ok(!d.stderr().includes(jwt(key, good).split('.')[2]));
});

test('the JWKS file is read again when it changes: a rotated key is taken, a broken file keeps the keys of before', async (t) => {
    const { d, resource, issuer, key, jwksFile } = await oauthSetup(t);
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: issuer, aud: resource, exp: now + 300, client_id: 'beta', scope: SCOPE };
    const k2 = ecKey('k2');
    const status = async (tok) => {
        const r = await mcpPost(d, INIT, { headers: { Authorization: `Bearer ${tok}` } });
        await r.text();
        return r.status;
    };
    assert.equal(await status(jwt(key, claims)), 200);
    assert.equal(await status(jwt(k2, claims)), 401);
    fs.writeFileSync(jwksFile + '.new', JSON.stringify({ keys: [key.publicJwk, k2.publicJwk] }), { mode: 0o600 });
    fs.renameSync(jwksFile + '.new', jwksFile);
    assert.ok(await until(async () => (await status(jwt(k2, claims))) === 200, 10000), 'the rotated key was not taken');
    assert.ok(await d.waitFor(/MCP_EXEC_OAUTH_JWKS changed: 2 signing keys/, 5000), d.stderr()); // stderr is read apart from the answers
    // The file is looked at when a token comes (at most once a second): keep asking until it was.
    fs.writeFileSync(jwksFile + '.new', '{"keys": [', { mode: 0o600 });
    fs.renameSync(jwksFile + '.new', jwksFile);
    assert.ok(await until(async () => (await status(jwt(k2, claims))) === 200 &&
        /MCP_EXEC_OAUTH_JWKS changed and cannot be used, the 2 keys of before stay: \S+ is not JSON/.test(d.stderr()), 10000), d.stderr());
    assert.equal(await status(jwt(key, claims)), 200);
});

test('OAuth settings that cannot work refuse the start (exit 2), naming what is wrong', async (t) => {
    const { spawnSync } = await import('node:child_process');
    const { binaryPath, daemonEnv } = await import('./lib/index.mjs');
    const key = ecKey('k1');
    const tenants = writeFile600(t, 'tenants', 'alpha -\n');
    const good = { MCP_EXEC_TRANSPORT: 'http', MCP_EXEC_ADDR: '127.0.0.1:1', MCP_EXEC_TENANTS: tenants,
        MCP_EXEC_OAUTH_ISSUER: 'http://127.0.0.1:9', MCP_EXEC_OAUTH_RESOURCE: 'http://127.0.0.1:1/mcp' };
    const cases = [
        [{ MCP_EXEC_OAUTH_JWKS: undefined }, /OAuth needs MCP_EXEC_OAUTH_JWKS too/],
        [{ MCP_EXEC_OAUTH_JWKS: writeFile600(t, 'j1', '{"keys": []}') }, /has no signing key/],
        [{ MCP_EXEC_OAUTH_JWKS: writeFile600(t, 'j2', 'not json') }, /is not JSON/],
        [{ MCP_EXEC_OAUTH_JWKS: writeFile600(t, 'j3', JSON.stringify({ keys: [key.privateJwk] })) }, /holds a private key \(d\)/],
        [{ MCP_EXEC_OAUTH_JWKS: writeFile600(t, 'j4', JSON.stringify({ keys: [key.publicJwk] })), MCP_EXEC_TENANTS: undefined }, /OAuth needs MCP_EXEC_TENANTS too/],
        [{ MCP_EXEC_OAUTH_JWKS: writeFile600(t, 'j5', JSON.stringify({ keys: [key.publicJwk] })), MCP_EXEC_OAUTH_RESOURCE: 'mcp' }, /MCP_EXEC_OAUTH_RESOURCE="mcp" is invalid/],
    ];
    for (const [extra, want] of cases) {
        const env = daemonEnv({ ...good, ...extra });
        for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
        const r = spawnSync(binaryPath(), [], { env, encoding: 'utf8', timeout: 20000 });
        assert.equal(r.status, 2, `${want}: ${r.stderr}`);
        assert.match(r.stderr, want);
    }
    // A tenant without a token ('-') needs OAuth.
    const env = daemonEnv({ MCP_EXEC_TRANSPORT: 'http', MCP_EXEC_ADDR: '127.0.0.1:1', MCP_EXEC_TENANTS: tenants });
    const r = spawnSync(binaryPath(), [], { env, encoding: 'utf8', timeout: 20000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /tenant alpha has no token \('-'\).*MCP_EXEC_OAUTH_ISSUER is not set/);
});
