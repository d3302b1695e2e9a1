package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// Round is what one probe round measured. Every rate is per second of CPU
// time the probe's thread obtained, so that time-sharing (fewer CPU seconds
// per wall second) is told apart from cache and memory contention (less
// work per CPU second).
type Round struct {
	// CPUShare is the probe thread's CPU seconds per wall second over the
	// whole round (0..1 on one CPU): below 1 means it waited for a CPU.
	CPUShare float64
	// CacheAccessesPerCPUSecond is dependent loads (one cache line each) over
	// the cache-sized working set per CPU second.
	CacheAccessesPerCPUSecond float64
	// MemoryBytesPerCPUSecond is bytes streamed (read) over the buffer much
	// larger than the cache per CPU second.
	MemoryBytesPerCPUSecond float64
	// CPUSeconds and WallSeconds are what the round cost and took.
	CPUSeconds  float64
	WallSeconds float64
}

// threadCPU is the CPU time of the calling OS thread (the caller must hold
// runtime.LockOSThread for it to mean anything).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// cacheLine is the stride of the pointer chase, in uint64 words (64 bytes).
const cacheLine = 8

// Kernels holds the two buffers the probe works on, allocated and touched
// once so that a round allocates nothing (no garbage collection inside a
// measurement) and the resident size is constant.
type Kernels struct {
	// chase: a single cycle through every cache line of the cache-sized set,
	// in random order, so hardware prefetchers cannot hide a miss.
	chase []uint64
	// stream: the large buffer read sequentially.
	stream []uint64
	// sink keeps the compiler from dropping the loops' results.
	sink uint64
}

// NewKernels allocates a chase over cacheBytes and a stream over memoryBytes.
func NewKernels(cacheBytes, memoryBytes int) *Kernels {
	lines := cacheBytes / (cacheLine * 8)
	if lines < 2 {
		lines = 2
	}
	chase := make([]uint64, lines*cacheLine)
	// Sattolo's algorithm: a random permutation that is one cycle, so the
	// chase visits every line before it repeats. A fixed xorshift seed keeps
	// rounds (and nodes) comparable.
	perm := make([]int, lines)
	for i := range perm {
		perm[i] = i
	}
	state := uint64(0x9E3779B97F4A7C15)
	for i := lines - 1; i > 0; i-- {
		state ^= state << 13
		state ^= state >> 7
		state ^= state << 17
		j := int(state % uint64(i))
		perm[i], perm[j] = perm[j], perm[i]
	}
	for i := 0; i < lines; i++ {
		chase[perm[i]*cacheLine] = uint64(perm[(i+1)%lines] * cacheLine)
	}
	stream := make([]uint64, memoryBytes/8)
	for i := range stream {
		stream[i] = uint64(i)
	}
	return &Kernels{chase: chase, stream: stream}
}

// spin burns CPU until the wall deadline; it touches no memory.
func (k *Kernels) spin(deadline time.Time) {
	x := k.sink | 1
	for time.Now().Before(deadline) {
		for i := 0; i < 4096; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
	}
	k.sink = x
}

// chaseUntil follows the chase until the wall deadline; returns the loads made.
func (k *Kernels) chaseUntil(deadline time.Time) uint64 {
	var hops uint64
	p := k.chase[0]
	for time.Now().Before(deadline) {
		for i := 0; i < 1024; i++ {
			p = k.chase[p]
		}
		hops += 1024
	}
	k.sink += p
	return hops
}

// streamUntil reads the large buffer sequentially, 64 KiB at a time, until
// the wall deadline; returns the bytes read. Four accumulators keep the loop
// bound by memory, not by one chain of additions.
func (k *Kernels) streamUntil(deadline time.Time) uint64 {
	const chunk = 64 << 10 / 8
	var bytes uint64
	var a, b, c, d uint64
	n := len(k.stream) - len(k.stream)%chunk
	pos := 0
	for time.Now().Before(deadline) {
		s := k.stream[pos : pos+chunk]
		for i := 0; i+3 < len(s); i += 4 {
			a += s[i]
			b += s[i+1]
			c += s[i+2]
			d += s[i+3]
		}
		bytes += chunk * 8
		pos += chunk
		if pos >= n {
			pos = 0
		}
	}
	k.sink += a + b + c + d
	return bytes
}

// Run measures one round of the given wall duration, a third per kernel.
// The caller must hold runtime.LockOSThread.
func (k *Kernels) Run(duration time.Duration) Round {
	phase := duration / 3
	wall0, cpu0 := time.Now(), threadCPU()

	k.spin(time.Now().Add(phase))

	c0, t0 := threadCPU(), time.Now()
	hops := k.chaseUntil(t0.Add(phase))
	cacheCPU := (threadCPU() - c0).Seconds()

	m0, t1 := threadCPU(), time.Now()
	bytes := k.streamUntil(t1.Add(phase))
	memCPU := (threadCPU() - m0).Seconds()

	wall := time.Since(wall0).Seconds()
	cpu := (threadCPU() - cpu0).Seconds()
	return Round{
		CPUShare:                  ratio(cpu, wall),
		CacheAccessesPerCPUSecond: ratio(float64(hops), cacheCPU),
		MemoryBytesPerCPUSecond:   ratio(float64(bytes), memCPU),
		CPUSeconds:                cpu,
		WallSeconds:               wall,
	}
}

func ratio(num, den float64) float64 {
	if den <= 0 {
		return 0
	}
	return num / den
}
