//go:build !linux

package reaper

// KillTree does nothing here: without /proc and a subreaper, a descendant
// that left its process group is out of reach.
func KillTree(pid int, marker string) {}

// ReapAdopted does nothing here: there is no subreaper to adopt orphans.
func ReapAdopted() {}
