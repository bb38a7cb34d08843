package scheduler

import (
	"os"
	"syscall"
	"unsafe"
)

// isTerminal asks the kernel for the terminal attributes of f (TCGETS):
// only a real terminal has them (a pipe, a file and /dev/null do not).
func isTerminal(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TCGETS), uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
