//go:build !linux

package tokens

func threadCPU() (int64, bool) { return 0, false }
