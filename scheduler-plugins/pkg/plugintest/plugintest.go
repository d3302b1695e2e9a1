// Package plugintest runs one plugin inside the real framework runtime
// (k8s.io/kubernetes/pkg/scheduler/framework/runtime) over a snapshot of
// nodes and pods, for the plugins' unit tests.
package plugintest

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// Cluster is a framework with one plugin enabled at every extension point
// it implements, over a fixed snapshot.
type Cluster struct {
	Framework framework.Framework
	Snapshot  *cache.Snapshot
	Nodes     []*v1.Node
}

// Plugin is one plugin of a profile: its name, factory, args (nil: its
// defaults) and score weight.
type Plugin struct {
	Name    string
	Factory frameworkruntime.PluginFactory
	Args    runtime.Object
	Weight  int32
}

// New builds the framework with one plugin. args may be nil (plugin defaults).
func New(t testing.TB, name string, factory frameworkruntime.PluginFactory, args runtime.Object, pods []*v1.Pod, nodes []*v1.Node) *Cluster {
	t.Helper()
	return NewProfile(t, []Plugin{{Name: name, Factory: factory, Args: args, Weight: 1}}, pods, nodes)
}

// NewProfile builds the framework with several plugins, each enabled at every
// extension point it implements, as the scheduler's multiPoint expansion
// does, with its score weight.
func NewProfile(t testing.TB, enabled []Plugin, pods []*v1.Pod, nodes []*v1.Node) *Cluster {
	t.Helper()
	// The framework records plugin metrics; the scheduler registers them at start.
	metrics.Register()
	registry := frameworkruntime.Registry{
		queuesort.Name:     queuesort.New,
		defaultbinder.Name: defaultbinder.New,
	}
	plugins := &config.Plugins{
		QueueSort: config.PluginSet{Enabled: []config.Plugin{{Name: queuesort.Name}}},
		Bind:      config.PluginSet{Enabled: []config.Plugin{{Name: defaultbinder.Name}}},
	}
	profile := &config.KubeSchedulerProfile{SchedulerName: "test", Plugins: plugins}
	for _, pl := range enabled {
		registry[pl.Name] = pl.Factory
		probe, err := pl.Factory(context.Background(), pl.Args, nil)
		if err != nil {
			t.Fatal(err)
		}
		entry := config.Plugin{Name: pl.Name, Weight: pl.Weight}
		if _, ok := probe.(framework.PreFilterPlugin); ok {
			plugins.PreFilter.Enabled = append(plugins.PreFilter.Enabled, entry)
		}
		if _, ok := probe.(framework.FilterPlugin); ok {
			plugins.Filter.Enabled = append(plugins.Filter.Enabled, entry)
		}
		if _, ok := probe.(framework.PreScorePlugin); ok {
			plugins.PreScore.Enabled = append(plugins.PreScore.Enabled, entry)
		}
		if _, ok := probe.(framework.ScorePlugin); ok {
			plugins.Score.Enabled = append(plugins.Score.Enabled, entry)
		}
		if pl.Args != nil {
			profile.PluginConfig = append(profile.PluginConfig, config.PluginConfig{Name: pl.Name, Args: pl.Args})
		}
	}
	snapshot := cache.NewSnapshot(pods, nodes)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	fw, err := frameworkruntime.NewFramework(ctx, registry, profile,
		frameworkruntime.WithSnapshotSharedLister(snapshot))
	if err != nil {
		t.Fatal(err)
	}
	return &Cluster{Framework: fw, Snapshot: snapshot, Nodes: nodes}
}

func (c *Cluster) nodeInfos(t testing.TB) []fwk.NodeInfo {
	t.Helper()
	infos, err := c.Snapshot.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

// Feasible runs PreFilter and Filter; returns the names of the nodes that pass.
func (c *Cluster) Feasible(t testing.TB, pod *v1.Pod) []string {
	t.Helper()
	return names(c.filter(t, framework.NewCycleState(), pod))
}

// Scores runs PreScore and Score (with NormalizeScore) over every node and
// returns the plugin's normalised score per node name; an empty map when
// PreScore skipped (the plugin is neutral for this pod).
func (c *Cluster) Scores(t testing.TB, pod *v1.Pod) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, node := range c.score(t, framework.NewCycleState(), pod, c.nodeInfos(t)) {
		for _, s := range node.Scores {
			out[node.Name] = s.Score
		}
	}
	return out
}

// Decision runs a whole scheduling cycle's filter and score over every node:
// the nodes that pass PreFilter and Filter, and each one's total score (the
// weighted sum of the plugins' normalised scores, as the scheduler adds them).
func (c *Cluster) Decision(t testing.TB, pod *v1.Pod) ([]string, map[string]int64) {
	t.Helper()
	state := framework.NewCycleState()
	feasible := c.filter(t, state, pod)
	totals := map[string]int64{}
	if len(feasible) == 0 {
		return names(feasible), totals
	}
	for _, node := range c.score(t, state, pod, feasible) {
		totals[node.Name] = node.TotalScore
	}
	return names(feasible), totals
}

// filter runs PreFilter and Filter over every node and returns the nodes that
// pass: none when PreFilter rejects the pod.
func (c *Cluster) filter(t testing.TB, state fwk.CycleState, pod *v1.Pod) []fwk.NodeInfo {
	t.Helper()
	ctx := context.Background()
	infos := c.nodeInfos(t)
	if _, status, _ := c.Framework.RunPreFilterPlugins(ctx, state, pod); !status.IsSuccess() && !status.IsSkip() {
		if status.IsRejected() {
			return nil
		}
		t.Fatalf("PreFilter: %v", status)
	}
	var feasible []fwk.NodeInfo
	for _, info := range infos {
		if status := c.Framework.RunFilterPlugins(ctx, state, pod, info); status.IsSuccess() {
			feasible = append(feasible, info)
		}
	}
	return feasible
}

// score runs PreScore and Score (with NormalizeScore) over the nodes.
func (c *Cluster) score(t testing.TB, state fwk.CycleState, pod *v1.Pod, infos []fwk.NodeInfo) []framework.NodePluginScores {
	t.Helper()
	ctx := context.Background()
	if status := c.Framework.RunPreScorePlugins(ctx, state, pod, infos); !status.IsSuccess() {
		t.Fatalf("PreScore: %v", status)
	}
	scores, status := c.Framework.RunScorePlugins(ctx, state, pod, infos)
	if !status.IsSuccess() {
		t.Fatalf("Score: %v", status)
	}
	return scores
}

// names are the nodes' names, nil for none.
func names(infos []fwk.NodeInfo) []string {
	var out []string
	for _, info := range infos {
		out = append(out, info.Node().Name)
	}
	return out
}
