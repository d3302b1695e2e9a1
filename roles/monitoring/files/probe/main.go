// interference-probe: a small standard victim on every node, in the manner of
// Bubble-Up's reporter. Every --interval it runs three short kernels for
// --duration and exports, labelled by node and resource, what it obtained
// (raw) and how much less that is than on the idle node (pressure 0..1,
// against a calibration made when it starts). See README.md for the metrics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the probe's own series (README.md, "Metrics").
type Metrics struct {
	pressure    *prometheus.GaugeVec
	calibration *prometheus.GaugeVec
	cpuShare    prometheus.Gauge
	cache       prometheus.Gauge
	memory      prometheus.Gauge
	rounds      prometheus.Counter
	cpuSeconds  prometheus.Counter
	last        prometheus.Gauge
	interval    prometheus.Gauge
	duration    prometheus.Gauge
}

// NewMetrics registers the probe's series on reg, every one labelled node.
func NewMetrics(reg prometheus.Registerer, node string) *Metrics {
	labels := prometheus.Labels{"node": node}
	f := func(name, help string) prometheus.GaugeOpts {
		return prometheus.GaugeOpts{Namespace: "interference_probe", Name: name, Help: help, ConstLabels: labels}
	}
	m := &Metrics{
		pressure: prometheus.NewGaugeVec(f("pressure",
			"How much less than idle the probe obtained in its last round: max(0, 1 - raw/calibrated idle), 0..1."),
			[]string{"resource"}),
		calibration: prometheus.NewGaugeVec(f("calibration",
			"Idle value of each raw signal (best of the calibration rounds at start), in that signal's unit."),
			[]string{"resource"}),
		cpuShare: prometheus.NewGauge(f("cpu_share_ratio",
			"CPU seconds the probe's thread obtained per wall second in its last round (resource cpu).")),
		cache: prometheus.NewGauge(f("llc_accesses_per_cpu_second",
			"Dependent loads over the cache-sized working set per CPU second, last round (resource llc).")),
		memory: prometheus.NewGauge(f("memory_bytes_per_cpu_second",
			"Bytes streamed over the large buffer per CPU second, last round (resource memory_bandwidth).")),
		rounds: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "interference_probe", Name: "rounds_total",
			Help: "Measurement rounds done since start, calibration excluded.", ConstLabels: labels}),
		cpuSeconds: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "interference_probe", Name: "kernel_cpu_seconds_total",
			Help: "CPU seconds the kernels spent (calibration included): the probe's measuring cost.", ConstLabels: labels}),
		last:     prometheus.NewGauge(f("last_round_timestamp_seconds", "Unix time the last round ended.")),
		interval: prometheus.NewGauge(f("interval_seconds", "Configured time between rounds.")),
		duration: prometheus.NewGauge(f("duration_seconds", "Configured wall time of one round.")),
	}
	reg.MustRegister(m.pressure, m.calibration, m.cpuShare, m.cache, m.memory, m.rounds, m.cpuSeconds, m.last,
		m.interval, m.duration)
	return m
}

// Record publishes one round against the calibration.
func (m *Metrics) Record(r Round, idle map[string]float64, now time.Time) {
	values := Values(r)
	for _, name := range Resources {
		m.pressure.WithLabelValues(name).Set(Pressure(values[name], idle[name]))
	}
	m.cpuShare.Set(r.CPUShare)
	m.cache.Set(r.CacheAccessesPerCPUSecond)
	m.memory.Set(r.MemoryBytesPerCPUSecond)
	m.rounds.Inc()
	m.cpuSeconds.Add(r.CPUSeconds)
	m.last.Set(float64(now.UnixNano()) / 1e9)
}

func parseConfig(args []string) (Config, string, error) {
	fs := flag.NewFlagSet("interference-probe", flag.ContinueOnError)
	c := Config{}
	fs.DurationVar(&c.Interval, "interval", 10*time.Second, "time between rounds")
	fs.DurationVar(&c.Duration, "duration", 100*time.Millisecond, "wall time of one round (a third per kernel)")
	fs.IntVar(&c.CacheBytes, "cache-bytes", 8<<20, "working set of the cache kernel, bytes")
	fs.IntVar(&c.MemoryBytes, "memory-bytes", 64<<20, "buffer of the memory-bandwidth kernel, bytes")
	fs.IntVar(&c.CalibrationRounds, "calibration-rounds", 5, "rounds at start whose best is the idle calibration")
	fs.StringVar(&c.Node, "node", os.Getenv("NODE_NAME"), "node label of every series (default $NODE_NAME)")
	listen := fs.String("listen", ":9477", "address of /metrics and /healthz")
	if err := fs.Parse(args); err != nil {
		return c, "", err
	}
	return c, *listen, c.Validate()
}

func main() {
	cfg, listen, err := parseConfig(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "interference-probe: %v\n", err)
		os.Exit(2)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	metrics := NewMetrics(reg, cfg.Node)
	metrics.interval.Set(cfg.Interval.Seconds())
	metrics.duration.Set(cfg.Duration.Seconds())

	var calibrated atomic.Bool
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !calibrated.Load() {
			http.Error(w, "calibrating", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	server := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatalf("interference-probe: listen %s: %v", listen, err)
		}
	}()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log.Printf("interference-probe: node %s, %s every %s (at most %.1f%% of one CPU), cache set %d B, stream %d B",
		cfg.Node, cfg.Duration, cfg.Interval, 100*cfg.DutyCycle(), cfg.CacheBytes, cfg.MemoryBytes)
	measure(ctx, cfg, metrics, &calibrated)
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = server.Shutdown(shutdown)
}

// measure calibrates, then runs a round every interval until ctx ends. It
// keeps one OS thread to itself so that the thread's CPU clock is the
// kernels' alone.
func measure(ctx context.Context, cfg Config, m *Metrics, calibrated *atomic.Bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	k := NewKernels(cfg.CacheBytes, cfg.MemoryBytes)
	rounds := make([]Round, 0, cfg.CalibrationRounds)
	for i := 0; i < cfg.CalibrationRounds; i++ {
		r := k.Run(cfg.Duration)
		m.cpuSeconds.Add(r.CPUSeconds)
		rounds = append(rounds, r)
	}
	idle := Calibrate(rounds)
	for _, name := range Resources {
		m.calibration.WithLabelValues(name).Set(idle[name])
	}
	log.Printf("interference-probe: idle calibration: cpu share %.3f, cache %.3g loads/CPU-s, memory %.3g B/CPU-s",
		idle["cpu"], idle["llc"], idle["memory_bandwidth"])
	calibrated.Store(true)
	ticker := time.NewTicker(cfg.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			m.Record(k.Run(cfg.Duration), idle, time.Now())
		}
	}
}
