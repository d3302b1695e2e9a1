package interference

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"interference.orchestrator/scheduler-plugins/pkg/cyclestate"
	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
	"interference.orchestrator/scheduler-plugins/pkg/plugintest"
)

// fixtureTimeShared is a time_sharing case's answer by the plugin's own
// functions, as the extender's added_time_shared computes it: a NodeLoad per
// node (its pods with a profile or a CPU demand, on its allocatable CPU),
// and, with sharing, the sums of Weighted and Exposure over the other nodes
// of the candidate's group.
func fixtureTimeShared(t *testing.T, pl *Plugin, tc fixtureCase) float64 {
	t.Helper()
	logger := klog.Background()
	kindOf := func(name string, fp fixturePod) (Kind, bool) {
		entry := pl.podOf(logger, makePod(name, fp))
		kind := Kind{Demand: entry.demand}
		if entry.usable {
			kind.Profile = entry.profile
		}
		return kind, entry.usable
	}
	pod, ok := kindOf(tc.Name+"-incoming", tc.Pod)
	if !ok {
		t.Fatalf("%s: no usable profile", tc.Name)
	}
	var loads []*NodeLoad
	for n, fn := range tc.cluster() {
		load := NewNodeLoad(Capacity(nodeObject(nodeName(n), fn.Labels, fn.CPU)))
		for i, fp := range fn.Pods {
			if kind, _ := kindOf(fmt.Sprintf("%s-%s-%d", tc.Name, nodeName(n), i), fp); kind != (Kind{}) {
				load.Add(kind, 1)
			}
		}
		loads = append(loads, load)
	}
	var others *GroupLoad // the other nodes of the candidate's group
	if tc.Sharing != nil {
		if value, labelled := tc.NodeLabels[tc.Sharing.Label]; labelled {
			others = &GroupLoad{}
			for j, node := range tc.OtherNodes {
				if other, labelled := node.Labels[tc.Sharing.Label]; labelled && other == value {
					weighted, exposure := loads[j+1].Weighted(), loads[j+1].Exposure()
					for i := range others.Weighted {
						others.Weighted[i] += weighted[i]
						others.Exposure[i] += exposure[i]
					}
				}
			}
		}
	}
	return AddedTimeShared(pod, loads[0], tc.Sharing.Shares(), others)
}

// TestFixtureTimeSharingThroughTheSnapshot runs the time_sharing cases in
// the framework: the plugin New builds with a handle lists the nodes from
// the snapshot (the case's nodes, with their allocatable CPU, and its pods
// bound to them). Only the candidate passes Filter; its raw score is the
// case's answer in Resolution units.
func TestFixtureTimeSharingThroughTheSnapshot(t *testing.T) {
	ran := 0
	for _, tc := range loadCases(t) {
		if !tc.TimeSharing {
			continue
		}
		ran++
		t.Run(tc.Name, func(t *testing.T) {
			var nodes []*v1.Node
			var pods []*v1.Pod
			for n, fn := range tc.cluster() {
				nodes = append(nodes, nodeObject(nodeName(n), fn.Labels, fn.CPU))
				for i, fp := range fn.Pods {
					pod := makePod(fmt.Sprintf("%s-%d", nodeName(n), i), fp)
					pod.Spec.NodeName = nodeName(n)
					pods = append(pods, pod)
				}
			}
			var pl *Plugin
			factory := func(ctx context.Context, obj runtime.Object, handle framework.Handle) (framework.Plugin, error) {
				plugin, err := New(ctx, obj, handle)
				if err == nil && handle != nil {
					pl = plugin.(*Plugin)
				}
				return plugin, err
			}
			var args runtime.Object
			if raw := tc.args(t); raw != "" {
				args = pluginargs.Unknown(raw)
			}
			cluster := plugintest.New(t, Name, factory, args, pods, nodes)
			if pl == nil {
				t.Fatal("the framework did not build the plugin with a handle")
			}
			candidate, err := cluster.Snapshot.NodeInfos().Get("n")
			if err != nil {
				t.Fatal(err)
			}
			pod := makePod("incoming", tc.Pod)
			cycle := framework.NewCycleState()
			if status := pl.PreScore(context.Background(), cycle, pod, []fwk.NodeInfo{candidate}); !status.IsSuccess() {
				t.Fatalf("PreScore: %v", status)
			}
			score, status := pl.Score(context.Background(), cycle, pod, candidate)
			if !status.IsSuccess() {
				t.Fatalf("Score: %v", status)
			}
			if want := int64(math.Round(*tc.Expected * float64(pl.args.Resolution))); score != want {
				t.Fatalf("raw score %d, want %d (added time-shared cost %v)", score, want, *tc.Expected)
			}
			// And the whole framework's PreScore, Score and NormalizeScore over every node.
			if scores := cluster.Scores(t, pod); len(scores) != len(nodes) {
				t.Fatalf("scores %v: want one per node", scores)
			}
		})
	}
	if ran == 0 {
		t.Fatal("the fixture has no time_sharing case")
	}
}

// TestParseCPUDemand: the values contract.py's pod_cpu_demand accepts
// (whole millicores, 1 to 9 digits) and those it reads as no demand.
func TestParseCPUDemand(t *testing.T) {
	for value, want := range map[string]int64{
		"1500m": 1500, "2000m": 2000, "250m": 250, "0m": 0, "999999999m": 999999999, "007m": 7,
		"": 0, "1": 0, "1.5": 0, "-1m": 0, "1500 m": 0, "1e3m": 0, "1500M": 0, "9999999999m": 0, "m": 0,
		" 1500m": 0, "1500m ": 0, "+1m": 0, "1500mm": 0, "１m": 0, "1500m\n": 0, "0x10m": 0, "١٢m": 0,
	} {
		if got := ParseCPUDemand(value); got != want {
			t.Errorf("ParseCPUDemand(%q) = %d, want %d", value, got, want)
		}
	}
}

// TestCapacity: a node's allocatable CPU in millicores as the extender
// reads it (rounded down), at least 1, +Inf when the node does not say it.
func TestCapacity(t *testing.T) {
	cpu := func(value string) *v1.Node {
		return &v1.Node{Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(value)}}}
	}
	for value, want := range map[string]float64{
		"1": 1000, "2": 2000, "1500m": 1500, "0.5": 500, "1.0005": 1000, "1500500u": 1500, "0": 1, "100u": 1,
		"-2": 1, "64k": 64_000_000,
	} {
		if got := Capacity(cpu(value)); got != want {
			t.Errorf("Capacity(%s) = %v, want %v", value, got, want)
		}
	}
	if got := Capacity(cpu("1e16")); math.Abs(got-1e19)/1e19 > 1e-12 {
		t.Errorf("Capacity(1e16) = %v, want 1e19", got)
	}
	for _, node := range []*v1.Node{nil, {}, {Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}}} {
		if got := Capacity(node); !math.IsInf(got, 1) {
			t.Errorf("Capacity without a cpu = %v, want +Inf", got)
		}
	}
}

// pairPod and pairNode are a cluster for the definition of the time-shared
// score, computed pair by pair.
type pairPod struct {
	profile Profile
	demand  int64
}

type pairNode struct {
	name     string
	host     string // "": in no group
	cpu      *string
	capacity float64
	pods     []pairPod
}

// pairwiseScore is the time-shared score by its definition (the docstring
// of timesharing.py): the sum over pods i of s_i - 1, with s_i = t_n(i) *
// (1 + sum over other pods j of sum_r p_ir p_jr share_r(n, m_j) c(i, j)).
func pairwiseScore(nodes []pairNode, shares Profile) float64 {
	var total float64
	for n, node := range nodes {
		var demand float64
		for _, pod := range node.pods {
			demand += float64(pod.demand)
		}
		for i, pi := range node.pods {
			var sum float64
			for m, other := range nodes {
				var otherDemand float64
				for _, pod := range other.pods {
					otherDemand += float64(pod.demand)
				}
				for j, pj := range other.pods {
					if m == n && j == i {
						continue
					}
					weight := Profile{1, 1, 1, 1, 1}
					chance := 1.0
					switch {
					case m == n && pi.demand > 0 && pj.demand > 0:
						chance = together(demand, node.capacity, float64(pi.demand))
					case m == n && pj.demand > 0:
						chance = 1 / factor(demand, node.capacity)
					case m == n:
					case node.host != "" && node.host == other.host:
						weight = shares
						if pj.demand > 0 {
							chance = 1 / factor(otherDemand, other.capacity)
						}
					default:
						continue
					}
					for r := range weight {
						sum += pi.profile[r] * pj.profile[r] * weight[r] * chance
					}
				}
			}
			slowed := 1.0
			if pi.demand > 0 {
				slowed = factor(demand, node.capacity)
			}
			total += slowed*(1+sum) - 1
		}
	}
	return total
}

// demanding is a pod with that profile annotation and CPU demand annotation
// ("" for none).
func demanding(name, profile, demand string) *v1.Pod {
	w := st.MakePod().Namespace("default").Name(name).UID(name).Annotation("interference.orchestrator/profile", profile)
	if demand != "" {
		w = w.Annotation(CPUDemandAnnotation, demand)
	}
	return w.Obj()
}

// TestTimeSharedMatchesThePairwiseDefinition: on random clusters (nodes
// oversubscribed or not, of unknown CPUs, on shared hosts or alone; pods
// with and without a demand), AddedTimeShared is the rise of the score
// computed pair by pair, and so is the plugin's raw score through PreScore
// and Score; with no demand anywhere, the plugin's score is the pair score
// of before, half of it.
func TestTimeSharedMatchesThePairwiseDefinition(t *testing.T) {
	random := rand.New(rand.NewPCG(1, 2))
	cpus := []string{"", "0", "1", "1500m", "2", "4"}
	demands := []int64{0, 0, 0, 500, 1000, 2000}
	hosts := []string{"", "a", "a", "b"}
	randomProfile := func() Profile {
		var profile Profile
		for r := range profile {
			if random.IntN(2) == 0 {
				profile[r] = float64(random.IntN(5)) / 4
			}
		}
		return profile
	}
	annotation := func(profile Profile) string {
		values := map[string]float64{}
		for r, value := range profile {
			values[Dimensions[r]] = value
		}
		raw, _ := json.Marshal(values)
		return string(raw)
	}
	demandText := func(demand int64) string {
		if demand == 0 && random.IntN(2) == 0 {
			return ""
		}
		return fmt.Sprintf("%dm", demand)
	}
	withoutDemand, oversubscribed, crossHost := 0, 0, 0
	for iteration := 0; iteration < 400; iteration++ {
		var shares Profile
		pressures := map[string]float64{}
		for r := range shares {
			if random.IntN(2) == 0 {
				shares[r] = float64(random.IntN(4)+1) / 4
				pressures[Dimensions[r]] = shares[r]
			}
		}
		noDemand := random.IntN(4) == 0 // some clusters declare no demand at all
		demandOf := func() int64 {
			if noDemand {
				return 0
			}
			return demands[random.IntN(len(demands))]
		}
		nodes := make([]pairNode, 1+random.IntN(4))
		var infos []fwk.NodeInfo
		for n := range nodes {
			node := &nodes[n]
			node.name = fmt.Sprintf("i%d-n%d", iteration, n)
			node.host = hosts[random.IntN(len(hosts))]
			node.capacity = math.Inf(1)
			if cpu := cpus[random.IntN(len(cpus))]; cpu != "" {
				node.cpu = &cpu
			}
			var onNode []*v1.Pod
			for i := random.IntN(5); i > 0; i-- {
				pod := pairPod{profile: randomProfile(), demand: demandOf()}
				node.pods = append(node.pods, pod)
				onNode = append(onNode, demanding(fmt.Sprintf("%s-p%d", node.name, i), annotation(pod.profile), demandText(pod.demand)))
			}
			labels := map[string]string{}
			if node.host != "" {
				labels["host"] = node.host
			}
			object := nodeObject(node.name, labels, node.cpu)
			node.capacity = Capacity(object)
			nodeInfo := framework.NewNodeInfo(onNode...)
			nodeInfo.SetNode(object)
			infos = append(infos, nodeInfo)
		}
		incoming := pairPod{profile: randomProfile(), demand: demandOf()}
		if incoming.profile == (Profile{}) {
			incoming.profile[0] = 1
		}
		before := pairwiseScore(nodes, shares)
		anyDemand := incoming.demand > 0
		for _, node := range nodes {
			for _, pod := range node.pods {
				anyDemand = anyDemand || pod.demand > 0
			}
		}
		raw, _ := json.Marshal(Args{Sharing: &SharingArgs{Label: "host", Pressures: pressures}})
		pl := newPlugin(t, string(raw))
		pl.allNodes = func() ([]fwk.NodeInfo, error) { return infos, nil }
		pod := demanding(fmt.Sprintf("i%d-incoming", iteration), annotation(incoming.profile), demandText(incoming.demand))
		cycle := framework.NewCycleState()
		if status := pl.PreScore(context.Background(), cycle, pod, infos); !status.IsSuccess() {
			t.Fatalf("PreScore: %v", status)
		}
		if s, _ := cyclestate.Read[*state](cycle, Name); s.timeSharing != anyDemand {
			t.Fatalf("iteration %d: time-sharing %v, want %v", iteration, s.timeSharing, anyDemand)
		}
		for k := range nodes {
			with := append([]pairNode(nil), nodes...)
			with[k].pods = append(append([]pairPod(nil), nodes[k].pods...), incoming)
			want := pairwiseScore(with, shares) - before

			// The plugin's functions, as fixtureTimeShared uses them.
			load := func(node pairNode) *NodeLoad {
				load := NewNodeLoad(node.capacity)
				for _, pod := range node.pods {
					load.Add(Kind{Profile: pod.profile, Demand: pod.demand}, 1)
				}
				return load
			}
			var others *GroupLoad
			if nodes[k].host != "" {
				others = &GroupLoad{}
				for m, node := range nodes {
					if m != k && node.host == nodes[k].host {
						weighted, exposure := load(node).Weighted(), load(node).Exposure()
						for r := range weighted {
							others.Weighted[r] += weighted[r]
							others.Exposure[r] += exposure[r]
						}
					}
				}
			}
			if after := load(with[k]); factor(after.demand, after.capacity) > 1 {
				oversubscribed++
			}
			if others != nil && others.Weighted != (Profile{}) && shares != (Profile{}) {
				crossHost++
			}
			got := AddedTimeShared(Kind{Profile: incoming.profile, Demand: incoming.demand}, load(nodes[k]), shares, others)
			if math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
				t.Fatalf("iteration %d, node %d: AddedTimeShared %v, pair by pair %v", iteration, k, got, want)
			}

			// The plugin's Score.
			if !anyDemand {
				want /= 2 // the pair score: each pair counts once
			}
			score, status := pl.Score(context.Background(), cycle, pod, infos[k])
			if !status.IsSuccess() {
				t.Fatalf("Score: %v", status)
			}
			if math.Abs(float64(score)-want*float64(pl.args.Resolution)) > 0.5+1e-6*max(1, math.Abs(want)) {
				t.Fatalf("iteration %d, node %d: raw score %d, want %v units", iteration, k, score, want*float64(pl.args.Resolution))
			}
		}
		if !anyDemand {
			withoutDemand++
		}
	}
	if withoutDemand == 0 || oversubscribed < 100 || crossHost < 100 {
		t.Fatalf("%d clusters without a demand, %d oversubscribed nodes, %d on a host with pods: want more",
			withoutDemand, oversubscribed, crossHost)
	}
	t.Logf("%d clusters without a demand, %d oversubscribed nodes, %d on a host with pods", withoutDemand, oversubscribed, crossHost)
}

// TestTimeSharingIgnoresThePodItself: the pod being scheduled, already in a
// NodeInfo, counts neither in its node's load nor in its group's.
func TestTimeSharingIgnoresThePodItself(t *testing.T) {
	cpu := "1"
	one := func(name, host string, pods ...*v1.Pod) *framework.NodeInfo {
		nodeInfo := framework.NewNodeInfo(pods...)
		nodeInfo.SetNode(nodeObject(name, map[string]string{"host": host}, &cpu))
		return nodeInfo
	}
	pod := demanding("p", `{"memory_bandwidth": 1}`, "1000m")
	score := func(nodes ...*framework.NodeInfo) map[string]int64 {
		pl := newPlugin(t, hostSharing)
		var infos []fwk.NodeInfo
		for _, nodeInfo := range nodes {
			infos = append(infos, nodeInfo)
		}
		pl.allNodes = func() ([]fwk.NodeInfo, error) { return infos, nil }
		return scoreAll(t, pl, pod, nodes...)
	}
	other := func() *v1.Pod { return demanding("q", `{"memory_bandwidth": 1}`, "1000m") }
	without := score(one("a1", "a", other()), one("a2", "a"))
	with := score(one("a1", "a", other(), pod), one("a2", "a"))
	plugintest.CheckScores(t, with, without)
	// Two 1-core memory apps on one CPU take turns: 1 each; across the host, 0.5 * 2.
	plugintest.CheckScores(t, without, map[string]int64{"a1": 2000, "a2": 1000})
}

// TestTimeSharingOnlyWithADemand: the pod's demand, or one on a node PreScore
// receives, turns time-sharing on; without sharing, the snapshot is never
// listed for it. A pod that presses on nothing but demands CPU still scores
// (it slows the demanding pods of an oversubscribed node).
func TestTimeSharingOnlyWithADemand(t *testing.T) {
	cpu := "1"
	node := func(name string, pods ...*v1.Pod) *framework.NodeInfo {
		nodeInfo := framework.NewNodeInfo(pods...)
		nodeInfo.SetNode(nodeObject(name, nil, &cpu))
		return nodeInfo
	}
	busy := node("busy", demanding("b", `{"cpu": 1}`, "2000m")) // 2 cores on 1 CPU
	plain := node("plain", demanding("c", `{"cpu": 1}`, ""))
	for _, tc := range []struct {
		pod   *v1.Pod
		nodes []*framework.NodeInfo
		want  map[string]int64
	}{
		// Time-shared: twice the pair score on the node with room; on busy,
		// b runs half the time (0.5 for the pod) and is slowed twice (2 for b).
		{demanding("cpu-0", `{"cpu": 1}`, ""), []*framework.NodeInfo{busy, plain}, map[string]int64{"busy": 2500, "plain": 2000}},
		{demanding("cpu-1", `{"cpu": 1}`, "1000m"), []*framework.NodeInfo{plain}, map[string]int64{"plain": 2000}},
		// The pair score of before: no demand on the nodes received.
		{demanding("cpu-2", `{"cpu": 1}`, ""), []*framework.NodeInfo{plain}, map[string]int64{"plain": 1000}},
		// Joining busy, the zero-profile demanding pod slows b from 2 to 3
		// times (1) and is slowed 3 times itself (2); on plain it fits.
		{demanding("zero", `{}`, "1000m"), []*framework.NodeInfo{busy, plain}, map[string]int64{"busy": 3000, "plain": 0}},
	} {
		pl := newPlugin(t, "")
		listed := 0
		pl.allNodes = func() ([]fwk.NodeInfo, error) {
			listed++
			return nil, fmt.Errorf("listed")
		}
		plugintest.CheckScores(t, scoreAll(t, pl, tc.pod, tc.nodes...), tc.want)
		if listed > 0 {
			t.Errorf("%s: nodes listed %d times without sharing", tc.pod.Name, listed)
		}
	}
	pl := newPlugin(t, "")
	if status := pl.PreScore(context.Background(), framework.NewCycleState(), demanding("none", `{}`, ""), nil); !status.IsSkip() {
		t.Errorf("a pod with no pressure and no demand: PreScore %v, want a skip", status)
	}
	if status := pl.PreScore(context.Background(), framework.NewCycleState(), demanding("bad", `{cpu}`, "1000m"), nil); !status.IsSkip() {
		t.Errorf("a pod with no usable profile and a demand: PreScore %v, want a skip", status)
	}
}

// TestTimeSharingParsesEachPodOnce: with demands, each pod is still parsed
// once over many cycles, and a changed demand is read again.
func TestTimeSharingParsesEachPodOnce(t *testing.T) {
	pl := newPlugin(t, "")
	var nodes []*framework.NodeInfo
	pods := 0
	cpu := "2"
	for n := 0; n < 20; n++ {
		nodeInfo := framework.NewNodeInfo()
		nodeInfo.SetNode(nodeObject(fmt.Sprintf("n%d", n), nil, &cpu))
		for i := 0; i < 4; i++ {
			nodeInfo.AddPod(demanding(fmt.Sprintf("n%d-p%d", n, i), `{"cpu": 0.5}`, "1000m"))
			pods++
		}
		nodes = append(nodes, nodeInfo)
	}
	for cycle := 0; cycle < 10; cycle++ {
		pod := demanding(fmt.Sprintf("incoming-%d", cycle), `{"cpu": 1}`, "")
		pods++
		for name, score := range scoreAll(t, pl, pod, nodes...) {
			// Four pods of 1 core on 2 CPUs: each runs half the time, so the
			// new pod meets 4 * 0.5 * 0.5, and each of them meets it all the
			// time, slowed twice: 4 * 0.5 * 2.
			if score != 5000 {
				t.Fatalf("%s: score %d, want 5000", name, score)
			}
		}
	}
	if got := pl.pods.parses.Load(); got != int64(pods) {
		t.Fatalf("%d parses for %d pods: want one per pod", got, pods)
	}
	changed := demanding("n0-p1", `{"cpu": 0.5}`, "0m")
	if err := nodes[0].RemovePod(klog.Background(), nodes[0].Pods[1].GetPod()); err != nil {
		t.Fatal(err)
	}
	nodes[0].AddPod(changed)
	if entry := pl.podOf(klog.Background(), changed); entry.demand != 0 || pl.pods.parses.Load() != int64(pods)+1 {
		t.Fatalf("a changed demand: %d (parses %d), want 0 read again", entry.demand, pl.pods.parses.Load())
	}
}
