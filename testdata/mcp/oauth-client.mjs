// A client of the official TypeScript MCP SDK that authorizes itself as
// the MCP authorization spec (2025-11-25) has it, knowing nothing but the
// server's URL: its first request gets 401 with a Bearer challenge naming
// the protected resource metadata (RFC 9728); the SDK's auth() reads it,
// then the authorization server's metadata (RFC 8414), registers a client
// (RFC 7591), and sends the user to the authorization endpoint with PKCE
// and the resource indicator (RFC 8707). Here the user is scripted: the
// redirect is followed by GETting the authorization URL with a username
// parameter (the test provider signs them in at once) and reading the
// code off the redirect back. The code is exchanged for a token, the
// client connects again, lists the tools and makes one tools/call. It
// prints, one JSON object a line on stdout:
//   {"event":"authorize","url":...}          the authorization URL the SDK built,
//   {"event":"token","aud":...,"scope":...}  the access token's audience and scope,
//   {"event":"fetched","urls":[...]}         every URL the client fetched, in order,
//   {"event":"result","result":{...}}        the tools/call result, then exits 0.
// Usage: node oauth-client.mjs SERVER_URL USERNAME TOOL ARGS_JSON
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const argv = process.argv.slice(2);
if (argv.length !== 4) {
  console.error("usage: oauth-client.mjs SERVER_URL USERNAME TOOL ARGS_JSON");
  process.exit(2);
}
const [serverURL, username, tool, argsJSON] = argv;
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

// The redirect URI is never reached: the script reads the code off the
// authorization endpoint's redirect itself.
const redirectUrl = "http://127.0.0.1:9/callback";
let authorizationUrl;
const store = {};
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return {
      client_name: "gatehost oauth-client test",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientInformation: () => store.client,
  saveClientInformation: (c) => { store.client = c; },
  tokens: () => store.tokens,
  saveTokens: (t) => { store.tokens = t; },
  redirectToAuthorization: (url) => { authorizationUrl = url; },
  saveCodeVerifier: (v) => { store.verifier = v; },
  codeVerifier: () => store.verifier,
  saveDiscoveryState: (s) => { store.discovery = s; },
  discoveryState: () => store.discovery,
};

const fetched = [];
const recordingFetch = (url, init) => {
  fetched.push(`${init?.method ?? "GET"} ${String(url)}`);
  return fetch(url, init);
};
const connect = async () => {
  const transport = new StreamableHTTPClientTransport(new URL(serverURL), { authProvider: provider, fetch: recordingFetch });
  const client = new Client({ name: "oauth-client", version: "1" }, { capabilities: {} });
  await client.connect(transport);
  return { client, transport };
};

let session;
try {
  session = await connect();
} catch (err) {
  if (!(err instanceof UnauthorizedError) || !authorizationUrl) {
    throw err;
  }
  out({ event: "authorize", url: authorizationUrl.toString() });
  // The scripted user signs in.
  const signIn = new URL(authorizationUrl);
  signIn.searchParams.set("username", username);
  const res = await fetch(signIn, { redirect: "manual" });
  const location = res.headers.get("location");
  if (res.status !== 303 || !location) {
    throw new Error(`the authorization endpoint answered ${res.status}: ${await res.text()}`);
  }
  const back = new URL(location);
  const code = back.searchParams.get("code");
  if (!code) {
    throw new Error(`no code in the redirect back: ${location}`);
  }
  const pending = new StreamableHTTPClientTransport(new URL(serverURL), { authProvider: provider, fetch: recordingFetch });
  await pending.finishAuth(code);
  session = await connect();
}
const claims = JSON.parse(Buffer.from(store.tokens.access_token.split(".")[1], "base64url").toString());
out({ event: "token", aud: claims.aud, scope: claims.scope });
const { client } = session;
await client.listTools();
const result = await client.callTool({ name: tool, arguments: JSON.parse(argsJSON) });
out({ event: "fetched", urls: fetched });
out({ event: "result", result });
await client.close();
process.exit(0);
