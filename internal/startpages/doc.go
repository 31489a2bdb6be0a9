// Package startpages gives back, once a long-lived server has started, the
// pages of e's own executable that only start-up touched.
//
// Go runs every linked package's init before main, and none of it can be
// deferred to first use: the markdown and highlighting libraries of export
// and the MCP SDK initialise in every e rpc too. Each init touches a page of
// text and of read-only data, and the kernel maps the 64 KiB around every
// such fault (fault-around), so after start-up most of the executable's
// 14 MiB of text and read-only data counted in the process's RSS (11.7 MiB
// of e rpc's 14.5 MiB idle RSS were file pages). Release unmaps those
// read-only, file-backed pages from the process: they stay in the page
// cache, shared, and the code a request runs maps its pages back with a
// minor fault, so the idle server holds only what it uses (bench/idle-rss).
// The price is those faults, once: about 3 ms for the first request on
// the machine bench/README.md's figures come from.
package startpages
