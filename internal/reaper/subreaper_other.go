//go:build !linux

package reaper

func becomeSubreaper() bool { return false }
