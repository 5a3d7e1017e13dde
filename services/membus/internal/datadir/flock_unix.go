//go:build unix

package datadir

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// tryLock takes an exclusive flock on f without waiting; false when another open file holds it.
func tryLock(f *os.File) (bool, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(lerr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return false, err
	}
	if errors.Is(lerr, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return lerr == nil, lerr
}

// lockHolderPID finds the pid holding the flock on f's inode in /proc/locks (Linux), 0 when it
// cannot tell. A line reads "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1048602 0 EOF"; waiters are
// marked "->" and skipped.
func lockHolderPID(f *os.File) int {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer locks.Close()
	ino := ":" + strconv.FormatUint(uint64(st.Ino), 10)
	pid := 0
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[3] != "WRITE" || !strings.HasSuffix(fields[5], ino) {
			continue
		}
		p, err := strconv.Atoi(fields[4])
		if err != nil || p <= 0 || (pid != 0 && pid != p) {
			return 0 // the same inode number on two devices: cannot tell which
		}
		pid = p
	}
	return pid
}
