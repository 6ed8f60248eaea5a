// Package approvale2e holds the end-to-end test of a person's approval
// through the approval page: the official TypeScript MCP SDK's client,
// declaring URL-mode elicitation, calls a real MCP server
// (@modelcontextprotocol/server-filesystem) through `gatehost mcp`; a
// headless Chromium opens the link the client prints, signs in through an
// OIDC provider, and approves or denies; the disk shows what ran. It has
// no code of its own.
package approvale2e
