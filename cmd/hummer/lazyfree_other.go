//go:build !linux

package main

// lazyFree: MADV_FREE for the Go heap is a Linux matter (see lazyfree_linux.go).
func lazyFree() {}
