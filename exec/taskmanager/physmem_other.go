//go:build !linux

package taskmanager

// physicalMemory returns 8 GiB: the machine's memory is read on Linux only.
func physicalMemory() int64 { return 8 << 30 }
