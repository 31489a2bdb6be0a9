//go:build !linux

package model

import "net"

// rawReads is the identity here: connections read as net does.
func rawReads(c net.Conn) net.Conn { return c }
