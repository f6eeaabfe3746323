package taskmanager

import "syscall"

// physicalMemory returns the machine's memory, or 8 GiB when it cannot tell.
func physicalMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return 8 << 30
	}
	return int64(si.Totalram) * int64(si.Unit)
}
