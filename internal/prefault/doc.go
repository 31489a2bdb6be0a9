// Package prefault maps in the pages of a large buffer that is about to be
// written whole, with one system call rather than one page fault per 4 KiB
// page. Where a page fault is dear (a virtual machine that traps each to
// its hypervisor: 11 µs a page on the one e's benchmarks ran on, against
// under 1 µs a page populated in bulk), writing a long answer's megabytes
// into fresh memory cost more than making them.
package prefault
