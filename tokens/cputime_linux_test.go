package tokens

import "syscall"

// threadCPU returns the CPU time the calling OS thread has used, in
// nanoseconds, and true; the benchmarks lock their goroutine to its thread.
// On a shared machine it is steadier than wall time.
func threadCPU() (int64, bool) {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
