package images

import "errors"

// Sentinel errors of the package; wrap them with %w.
var (
	// ErrNotAnImage: a directory given to Run has no readable manifest.
	ErrNotAnImage = errors.New("not an image directory")
	// ErrKernel: no usable kernel (the package could not be fetched or read, the
	// file is no bzImage, a module is missing).
	ErrKernel = errors.New("kernel")
	// ErrNotStatic: the hummer binary to put in an image is dynamically linked,
	// and would find no C library in it.
	ErrNotStatic = errors.New("binary is not statically linked")
	// ErrNotPID1: Boot was called in a process that is not the VM's init.
	ErrNotPID1 = errors.New("not PID 1")
	// ErrRoleFailed: the role inside the VM ended with an error (the init says
	// so on the console before it powers off).
	ErrRoleFailed = errors.New("the role in the VM failed")
)
