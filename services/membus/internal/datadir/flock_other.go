//go:build !unix

package datadir

import "os"

// tryLock: this platform has no flock, so the data dir is not locked (one owner is then up to
// the operator).
func tryLock(*os.File) (bool, error) { return true, nil }

// lockHolderPID cannot tell on this platform.
func lockHolderPID(*os.File) int { return 0 }
