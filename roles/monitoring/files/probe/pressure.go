package main

import (
	"errors"
	"fmt"
	"time"
)

// Resources are the three signals, in the order of the resource label.
var Resources = []string{"cpu", "llc", "memory_bandwidth"}

// Values picks the raw value of each resource from a round: CPU share,
// cache accesses per CPU second, memory bytes per CPU second.
func Values(r Round) map[string]float64 {
	return map[string]float64{
		"cpu":              r.CPUShare,
		"llc":              r.CacheAccessesPerCPUSecond,
		"memory_bandwidth": r.MemoryBytesPerCPUSecond,
	}
}

// Pressure is how much less than on the idle node a signal obtains:
// max(0, 1 - value/idle), at most 1. 0 is as good as idle (or better), 1 is
// nothing at all. An idle value of zero (never calibrated) gives 0.
func Pressure(value, idle float64) float64 {
	if idle <= 0 {
		return 0
	}
	p := 1 - value/idle
	if p < 0 {
		return 0
	}
	if p > 1 {
		return 1
	}
	return p
}

// Calibrate is the best (largest) value of each resource over the rounds:
// the node's own idle capacity, measured when the probe starts.
func Calibrate(rounds []Round) map[string]float64 {
	best := map[string]float64{}
	for _, r := range rounds {
		for name, v := range Values(r) {
			if v > best[name] {
				best[name] = v
			}
		}
	}
	return best
}

// Config is the probe's configuration (flags, set by the monitoring role).
type Config struct {
	Interval          time.Duration
	Duration          time.Duration
	CacheBytes        int
	MemoryBytes       int
	CalibrationRounds int
	Node              string
}

// Validate refuses a configuration the probe cannot honour, naming the flag.
func (c Config) Validate() error {
	var errs []error
	if c.Duration < 30*time.Millisecond {
		errs = append(errs, fmt.Errorf("--duration %s: at least 30ms (three kernels of 10ms)", c.Duration))
	}
	if c.Interval <= c.Duration {
		errs = append(errs, fmt.Errorf("--interval %s must be longer than --duration %s", c.Interval, c.Duration))
	}
	if c.CacheBytes < 64<<10 {
		errs = append(errs, fmt.Errorf("--cache-bytes %d: at least 65536", c.CacheBytes))
	}
	if c.MemoryBytes <= c.CacheBytes {
		errs = append(errs, fmt.Errorf("--memory-bytes %d must be larger than --cache-bytes %d", c.MemoryBytes, c.CacheBytes))
	}
	if c.MemoryBytes < 64<<10 {
		errs = append(errs, fmt.Errorf("--memory-bytes %d: at least 65536", c.MemoryBytes))
	}
	if c.CalibrationRounds < 1 {
		errs = append(errs, fmt.Errorf("--calibration-rounds %d: at least 1", c.CalibrationRounds))
	}
	if c.Node == "" {
		errs = append(errs, errors.New("--node (or NODE_NAME) is empty"))
	}
	return errors.Join(errs...)
}

// DutyCycle is the share of one CPU the probe's rounds cost at most.
func (c Config) DutyCycle() float64 {
	return c.Duration.Seconds() / c.Interval.Seconds()
}
