package main

import (
	"crypto/sha256"
	"runtime"
	"slices"
	"syscall"
	"time"
)

// CPU work of a known length, on the request path: chained SHA-256 over 32 bytes until this
// thread's own CPU clock has advanced by the time asked, read every ~50 µs of work (batches
// sized by a calibration at start). Counting CPU time rather than a fixed number of rounds keeps
// M ms at M ms when the host's other CPU is busy (on a VM, a busy sibling makes every round
// slower); time spent waiting for a CPU is not counted.

// work runs rounds chained SHA-256 rounds. The loop allocates nothing, so the garbage collector
// adds no cost that calibration did not see.
func work(rounds int64) [32]byte {
	var value [32]byte
	for range rounds {
		value = sha256.Sum256(value[:])
	}
	return value
}

// rusageThread is Linux's RUSAGE_THREAD, which package syscall does not name.
const rusageThread = 1

// threadCPU is the CPU time (user and system) of the calling OS thread; where the system has
// no per-thread figure, that of the whole process.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			panic("getrusage: " + err.Error())
		}
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// calibrate returns the rounds of work that take 1 ms of CPU, measured on a thread of its own:
// a warm-up, then five windows of about 20 ms of CPU each (about 100 ms in all). The median
// window's rate is kept, so that one window the host disturbed does not skew every request.
func calibrate() int64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	work(20_000)
	var rates [5]int64
	batch := int64(1_000)
	for i := range rates {
		start := threadCPU()
		var rounds int64
		for {
			work(batch)
			rounds += batch
			if spent := threadCPU() - start; spent >= 20*time.Millisecond {
				rates[i] = rounds * int64(time.Millisecond) / int64(spent)
				break
			}
		}
		// About a quarter of a millisecond between clock readings from now on.
		batch = max(1_000, rates[i]/4)
	}
	slices.Sort(rates[:])
	return max(1, rates[len(rates)/2])
}

// spend runs chained SHA-256 until the goroutine's thread has spent d of CPU. The goroutine is
// locked to its thread meanwhile, so that the clock read is that of the thread doing the work.
func spend(d time.Duration, roundsPerMs int64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	batch := max(1, roundsPerMs/20)
	end := threadCPU() + d
	for threadCPU() < end {
		work(batch)
	}
}
