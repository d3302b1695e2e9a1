package main

import (
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPressureAgainstIdle(t *testing.T) {
	cases := []struct {
		name              string
		value, idle, want float64
	}{
		{"as idle", 1.0, 1.0, 0},
		{"half of idle", 0.5, 1.0, 0.5},
		{"a quarter of idle", 2.5e9, 1e10, 0.75},
		{"better than idle is no pressure", 1.2, 1.0, 0},
		{"nothing obtained", 0, 1.0, 1},
		{"negative raw value is clamped to 1", -1, 1.0, 1},
		{"never calibrated", 0.3, 0, 0},
	}
	for _, c := range cases {
		if got := Pressure(c.value, c.idle); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: Pressure(%g, %g) = %g, want %g", c.name, c.value, c.idle, got, c.want)
		}
	}
}

func TestCalibrationIsTheBestOfEachSignal(t *testing.T) {
	rounds := []Round{
		{CPUShare: 0.9, CacheAccessesPerCPUSecond: 3e8, MemoryBytesPerCPUSecond: 5e9},
		{CPUShare: 0.99, CacheAccessesPerCPUSecond: 2e8, MemoryBytesPerCPUSecond: 6e9},
		{CPUShare: 0.5, CacheAccessesPerCPUSecond: 4e8, MemoryBytesPerCPUSecond: 1e9},
	}
	idle := Calibrate(rounds)
	want := map[string]float64{"cpu": 0.99, "llc": 4e8, "memory_bandwidth": 6e9}
	for name, v := range want {
		if idle[name] != v {
			t.Errorf("calibration of %s = %g, want %g (best of the rounds)", name, idle[name], v)
		}
	}
}

func TestRecordPublishesPressureByResourceAndNode(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "worker-1")
	idle := map[string]float64{"cpu": 1.0, "llc": 4e8, "memory_bandwidth": 8e9}
	m.Record(Round{CPUShare: 0.25, CacheAccessesPerCPUSecond: 3e8, MemoryBytesPerCPUSecond: 8e9, CPUSeconds: 0.025}, idle, time.Unix(100, 0))
	want := `
# HELP interference_probe_pressure How much less than idle the probe obtained in its last round: max(0, 1 - raw/calibrated idle), 0..1.
# TYPE interference_probe_pressure gauge
interference_probe_pressure{node="worker-1",resource="llc"} 0.25
interference_probe_pressure{node="worker-1",resource="cpu"} 0.75
interference_probe_pressure{node="worker-1",resource="memory_bandwidth"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "interference_probe_pressure"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.cpuShare); got != 0.25 {
		t.Errorf("cpu_share_ratio = %g, want 0.25", got)
	}
	if got := testutil.ToFloat64(m.rounds); got != 1 {
		t.Errorf("rounds_total = %g, want 1", got)
	}
}

func TestConfigValidation(t *testing.T) {
	good := Config{Interval: 10 * time.Second, Duration: 100 * time.Millisecond, CacheBytes: 8 << 20,
		MemoryBytes: 64 << 20, CalibrationRounds: 5, Node: "n"}
	if err := good.Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	if d := good.DutyCycle(); d > 0.02 {
		t.Errorf("default duty cycle %.3f exceeds 2%% of one CPU", d)
	}
	bad := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"interval not longer than duration", func(c *Config) { c.Interval = c.Duration }, "--interval"},
		{"duration too short", func(c *Config) { c.Duration = time.Millisecond }, "--duration"},
		{"stream not larger than the cache set", func(c *Config) { c.MemoryBytes = c.CacheBytes }, "--memory-bytes"},
		{"no node", func(c *Config) { c.Node = "" }, "--node"},
		{"no calibration", func(c *Config) { c.CalibrationRounds = 0 }, "--calibration-rounds"},
	}
	for _, b := range bad {
		c := good
		b.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: error %v, want one naming %s", b.name, err, b.want)
		}
	}
}

func TestParseConfigFlags(t *testing.T) {
	c, listen, err := parseConfig([]string{"--node=w", "--interval=2s", "--duration=60ms", "--listen=:1"})
	if err != nil || c.Interval != 2*time.Second || c.Duration != 60*time.Millisecond || listen != ":1" {
		t.Fatalf("parseConfig: %+v %q %v", c, listen, err)
	}
	if _, _, err := parseConfig([]string{"--node=w", "--interval=50ms", "--duration=60ms"}); err == nil {
		t.Fatal("interval shorter than duration accepted")
	}
}

// One real round on small buffers: every raw signal is positive and the CPU
// share is a share (the test machine may be busy, so no lower bound).
func TestRoundMeasuresEverySignal(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	k := NewKernels(256<<10, 4<<20)
	r := k.Run(60 * time.Millisecond)
	if r.CPUShare <= 0 || r.CPUShare > 1.05 {
		t.Errorf("cpu share %g outside (0, 1.05]", r.CPUShare)
	}
	if r.CacheAccessesPerCPUSecond <= 0 || r.MemoryBytesPerCPUSecond <= 0 {
		t.Errorf("round %+v: a raw signal is not positive", r)
	}
	if r.WallSeconds < 0.059 {
		t.Errorf("round took %gs of wall time, want the 60ms asked", r.WallSeconds)
	}
}

// The chase is one cycle through every cache line: it visits each line
// once before it comes back to the first.
func TestChaseIsOneCycleOverEveryLine(t *testing.T) {
	k := NewKernels(64<<10, 1<<20)
	lines := len(k.chase) / cacheLine
	seen := map[uint64]bool{}
	p := uint64(0)
	for i := 0; i < lines; i++ {
		if seen[p] {
			t.Fatalf("line %d visited twice after %d hops of %d", p/cacheLine, i, lines)
		}
		seen[p] = true
		p = k.chase[p]
	}
	if p != 0 {
		t.Fatalf("after %d hops the chase is at %d, not back at 0", lines, p)
	}
}
