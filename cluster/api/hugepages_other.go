//go:build !linux

package api

// adviseHuge does nothing but on Linux (hugepages_linux.go).
func adviseHuge([]byte) {}
