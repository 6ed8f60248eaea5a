// A client of the official TypeScript MCP SDK that declares URL-mode
// elicitation (MCP 2025-11-25) and nothing else: it starts the command
// after "--" as an MCP server over stdio, lists the tools, makes one
// tools/call and prints, one JSON object a line on stdout:
//   {"event":"elicitation","mode":"url","url":...,"elicitationId":...,"message":...}
//     for each elicitation/create (it answers "accept": the person was
//     shown the link; the link is where the person decides),
//   {"event":"elicitation_complete","elicitationId":...},
//   {"event":"result","result":{...}}  the tools/call result, then exits 0;
//     with HOLD_UNTIL_STDIN_CLOSES=1 it first waits for its stdin to close,
//     keeping the server (and a page it serves) up until the caller is done.
// Usage: node url-elicitation-client.mjs TOOL ARGS_JSON -- COMMAND [ARGS...]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, ElicitationCompleteNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const argv = process.argv.slice(2);
const sep = argv.indexOf("--");
if (sep !== 2 || argv.length < 4) {
  console.error("usage: url-elicitation-client.mjs TOOL ARGS_JSON -- COMMAND [ARGS...]");
  process.exit(2);
}
const [tool, argsJSON] = argv;
const [command, ...commandArgs] = argv.slice(3);
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const client = new Client({ name: "url-elicitation-client", version: "1" }, { capabilities: { elicitation: { url: {} } } });
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  const p = req.params;
  out({ event: "elicitation", mode: p.mode ?? "form", url: p.url, elicitationId: p.elicitationId, message: p.message });
  return { action: "accept" };
});
client.setNotificationHandler(ElicitationCompleteNotificationSchema, async (n) => {
  out({ event: "elicitation_complete", elicitationId: n.params.elicitationId });
});

const transport = new StdioClientTransport({ command, args: commandArgs, env: process.env, stderr: "inherit" });
await client.connect(transport);
await client.listTools();
// The approval may take the person a while: the call's timeout is the
// gateway's approval TTL's business, not this client's.
const result = await client.callTool({ name: tool, arguments: JSON.parse(argsJSON) }, undefined, { timeout: 600000 });
out({ event: "result", result });
if (process.env.HOLD_UNTIL_STDIN_CLOSES === "1") {
  process.stdin.resume();
  await new Promise((resolve) => process.stdin.on("end", resolve).on("close", resolve));
}
await client.close();
process.exit(0);
