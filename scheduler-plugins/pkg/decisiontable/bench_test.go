package decisiontable

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"interference.orchestrator/scheduler-plugins/pkg/gpu"
	"interference.orchestrator/scheduler-plugins/pkg/interference"
	"interference.orchestrator/scheduler-plugins/pkg/plugintest"
	"interference.orchestrator/scheduler-plugins/pkg/spot"
	"interference.orchestrator/scheduler-plugins/pkg/zone"
)

// rolePlugins are the four plugins with the score weights of the
// scheduler_plugins role's defaults (roles/scheduler_plugins/defaults/main.yml).
func rolePlugins() []plugintest.Plugin {
	return []plugintest.Plugin{
		{Name: gpu.Name, Factory: gpu.New, Weight: 10},
		{Name: spot.Name, Factory: spot.New, Weight: 5},
		{Name: zone.Name, Factory: zone.New, Weight: 3},
		{Name: interference.Name, Factory: interference.New, Weight: 10},
	}
}

var dimensions = []string{"cpu", "memory_bandwidth", "llc", "disk_io", "network_io"}

// burstCluster is the benchmark's cluster: `nodes` nodes in three zones,
// half of them spot, one in twenty with GPUs, and `pods` pods spread over
// them, each of one of 50 ReplicaSets with a random profile of one to three
// dimensions (as benchmarks/schedulers.py's mixed profiles).
func burstCluster(nodes, pods int) ([]*v1.Node, []*v1.Pod) {
	rng := rand.New(rand.NewSource(11))
	var nodeList []*v1.Node
	for i := 0; i < nodes; i++ {
		w := st.MakeNode().Name(fmt.Sprintf("node-%04d", i)).
			Label(v1.LabelTopologyZone, fmt.Sprintf("zone-%c", 'a'+i%3)).
			Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "16", v1.ResourceMemory: "64Gi", v1.ResourcePods: "110"})
		if i%2 == 0 {
			w = w.Label("karpenter.sh/capacity-type", "spot")
		} else {
			w = w.Label("karpenter.sh/capacity-type", "on-demand")
		}
		if i%20 == 0 {
			w = w.Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "16", "nvidia.com/gpu": "4"}).Label("gpu.nvidia.com/memory", "81920")
		}
		nodeList = append(nodeList, w.Obj())
	}
	var podList []*v1.Pod
	for i := 0; i < pods; i++ {
		podList = append(podList, burstPod(rng, fmt.Sprintf("p-%05d", i), nodeList[i%nodes].Name))
	}
	return nodeList, podList
}

func burstPod(rng *rand.Rand, name, node string) *v1.Pod {
	profile := "{"
	for j, d := range rng.Perm(len(dimensions))[:1+rng.Intn(3)] {
		if j > 0 {
			profile += ", "
		}
		profile += fmt.Sprintf("%q: %.1f", dimensions[d], []float64{0.3, 0.5, 0.8, 1.0}[rng.Intn(4)])
	}
	profile += "}"
	w := st.MakePod().Namespace("bench").Name(name).UID(name).
		Annotation("interference.orchestrator/profile", profile).
		Label("interference.orchestrator/type", "cpu").
		OwnerReference(fmt.Sprintf("rs-%02d", rng.Intn(50)), appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	if node != "" {
		w = w.Node(node)
	}
	return w.Obj()
}

// benchmarkCycles runs PreScore and Score of `plugins` over every node, one
// pod per iteration, and assumes each pod onto a node afterwards as the
// scheduler does (a new NodeInfo generation), so the per-node caches see the
// churn of a burst: one node changes per cycle.
func benchmarkCycles(b *testing.B, plugins []plugintest.Plugin) {
	nodes, pods := burstCluster(1000, 5000)
	cluster := plugintest.NewProfile(b, plugins, pods, nodes)
	infos, err := cluster.Snapshot.NodeInfos().List()
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewSource(12))
	incoming := make([]*v1.Pod, b.N)
	for i := range incoming {
		incoming[i] = burstPod(rng, fmt.Sprintf("incoming-%06d", i), "")
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pod := incoming[i]
		state := framework.NewCycleState()
		if status := cluster.Framework.RunPreScorePlugins(ctx, state, pod, infos); !status.IsSuccess() {
			b.Fatal(status)
		}
		scores, status := cluster.Framework.RunScorePlugins(ctx, state, pod, infos)
		if !status.IsSuccess() {
			b.Fatal(status)
		}
		best := scores[0]
		for _, s := range scores {
			if s.TotalScore > best.TotalScore {
				best = s
			}
		}
		assumed := pod.DeepCopy()
		assumed.Spec.NodeName = best.Name
		for _, info := range infos {
			if info.Node().Name == best.Name {
				info.(*framework.NodeInfo).AddPod(assumed)
			}
		}
	}
}

// BenchmarkCycle: each plugin alone, then the four together, over 1,000
// nodes with 5,000 pods. Run with -cpuprofile to see where the time goes:
//
//	go test ./pkg/decisiontable -run '^$' -bench Cycle -benchtime 2000x -cpuprofile cpu.out
func BenchmarkCycle(b *testing.B) {
	for _, pl := range rolePlugins() {
		b.Run(pl.Name, func(b *testing.B) { benchmarkCycles(b, []plugintest.Plugin{pl}) })
	}
	b.Run("all", func(b *testing.B) { benchmarkCycles(b, rolePlugins()) })
}

var _ fwk.NodeInfo = &framework.NodeInfo{}
