// Package mcp connects e to MCP (Model Context Protocol) servers over
// stdio, with the official Go SDK (github.com/modelcontextprotocol/go-sdk):
// it starts a server as a child process in its own process group, lists
// its tools and calls them. A server that exits or crashes fails its
// pending and later calls at once and is reported once; Close ends the
// whole process group. The agent offers the tools beside the built-in
// ones under names that cannot collide (Name).
package mcp
