package main

import (
	"runtime"
	"testing"
	"time"
)

func TestTheCPUAskedIsTheCPUSpent(t *testing.T) {
	perMs := calibrate()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	spend(50*time.Millisecond, perMs)
	spent := threadCPU() - start
	if spent < 50*time.Millisecond || spent > 53*time.Millisecond {
		t.Fatalf("50 ms asked (%d rounds per ms), %v of CPU spent", perMs, spent)
	}
}
