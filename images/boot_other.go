//go:build !linux

package images

// Boot is the VM's init; images boot Linux, so elsewhere it only refuses.
func Boot(extra []string) error { return ErrNotPID1 }
