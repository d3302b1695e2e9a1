package interference

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"interference.orchestrator/scheduler-plugins/pkg/cyclestate"
	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
	"interference.orchestrator/scheduler-plugins/pkg/plugintest"
)

// fixturePod is a pod as tests/fixtures/interference_cases.json gives it.
type fixturePod struct {
	Annotations map[string]string `json:"annotations"`
	Labels      map[string]string `json:"labels"`
}

// fixtureNode is one of the cluster's other nodes: its labels, pods and,
// for the time_sharing cases, its allocatable CPU (nil: unknown).
type fixtureNode struct {
	Labels map[string]string `json:"labels"`
	Pods   []fixturePod      `json:"pods"`
	CPU    *string           `json:"cpu"`
}

type fixtureCase struct {
	Name     string       `json:"name"`
	Pod      fixturePod   `json:"pod"`
	NodePods []fixturePod `json:"node_pods"`
	Expected *float64     `json:"expected"`
	// Sharing is the engine's option; NodeLabels are the candidate node's
	// labels and OtherNodes the cluster's other nodes.
	Sharing    *SharingArgs      `json:"sharing"`
	NodeLabels map[string]string `json:"node_labels"`
	OtherNodes []fixtureNode     `json:"other_nodes"`
	// TimeSharing cases score CPU time-sharing: NodeCPU is the candidate's
	// allocatable CPU (nil: unknown), and pods declare a CPU demand.
	TimeSharing bool    `json:"time_sharing"`
	NodeCPU     *string `json:"node_cpu"`
}

// args are the plugin's raw args for the case: its sharing, if any.
func (tc fixtureCase) args(t *testing.T) string {
	t.Helper()
	if tc.Sharing == nil {
		return ""
	}
	raw, err := json.Marshal(Args{Sharing: tc.Sharing})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// cluster is the case's nodes: the candidate node "n" first, then one per
// other node ("o0", "o1", ...), each with its labels, CPU and pods.
func (tc fixtureCase) cluster() []fixtureNode {
	all := []fixtureNode{{Labels: tc.NodeLabels, Pods: tc.NodePods, CPU: tc.NodeCPU}}
	return append(all, tc.OtherNodes...)
}

// nodeName is the name of the i-th node of cluster().
func nodeName(i int) string {
	if i == 0 {
		return "n"
	}
	return fmt.Sprintf("o%d", i-1)
}

// nodeObject is a Node with the labels and, when cpu is not nil, that
// allocatable CPU.
func nodeObject(name string, labels map[string]string, cpu *string) *v1.Node {
	w := st.MakeNode().Name(name)
	for k, v := range labels {
		w = w.Label(k, v)
	}
	node := w.Obj()
	if cpu != nil {
		node.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse(*cpu)}
	}
	return node
}

// nodes are the case's NodeInfos, in cluster() order.
func (tc fixtureCase) nodes() []fwk.NodeInfo {
	var all []fwk.NodeInfo
	for n, fn := range tc.cluster() {
		name := nodeName(n)
		var onNode []*v1.Pod
		for i, fp := range fn.Pods {
			onNode = append(onNode, makePod(fmt.Sprintf("%s-%d", name, i), fp))
		}
		nodeInfo := framework.NewNodeInfo(onNode...)
		nodeInfo.SetNode(nodeObject(name, fn.Labels, fn.CPU))
		all = append(all, nodeInfo)
	}
	return all
}

func loadCases(t *testing.T) []fixtureCase {
	t.Helper()
	return plugintest.LoadCases[fixtureCase](t, "interference_cases.json")
}

func makePod(name string, fp fixturePod) *v1.Pod {
	w := st.MakePod().Namespace("default").Name(name).UID(name)
	for k, v := range fp.Labels {
		w = w.Label(k, v)
	}
	for k, v := range fp.Annotations {
		w = w.Annotation(k, v)
	}
	return w.Obj()
}

func newPlugin(t *testing.T, raw string) *Plugin {
	t.Helper()
	var args = pluginargs.Unknown(raw)
	if raw == "" {
		args = nil
	}
	pl, err := New(context.Background(), args, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pl.(*Plugin)
}

// TestFixtureCases runs the shared fixture through the plugin's PreScore and
// Score: the raw score is the added interference times Resolution, and a pod
// without a usable profile makes PreScore skip. Only the candidate node
// passed Filter; the plugin lists every node (the other nodes of the case)
// through allNodes, as the scheduler's snapshot gives them.
func TestFixtureCases(t *testing.T) {
	for _, tc := range loadCases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			pl := newPlugin(t, tc.args(t))
			pod := makePod("incoming", tc.Pod)
			all := tc.nodes()
			nodeInfo := all[0]
			listed := 0
			pl.allNodes = func() ([]fwk.NodeInfo, error) {
				listed++
				return all, nil
			}
			cycle := framework.NewCycleState()
			status := pl.PreScore(context.Background(), cycle, pod, []fwk.NodeInfo{nodeInfo})
			if tc.Sharing == nil && listed > 0 {
				t.Fatalf("PreScore listed the nodes %d times without sharing", listed)
			}
			if tc.Expected == nil {
				if !status.IsSkip() {
					t.Fatalf("want PreScore to skip (neutral), got %v", status)
				}
				return
			}
			if !status.IsSuccess() {
				if *tc.Expected == 0 && status.IsSkip() {
					return // a zero profile is neutral, and adds nothing anywhere
				}
				t.Fatalf("PreScore: %v", status)
			}
			if s, status := cyclestate.Read[*state](cycle, Name); status != nil || s.timeSharing != tc.TimeSharing {
				t.Fatalf("PreScore's time-sharing %v (%v), want %v", s != nil && s.timeSharing, status, tc.TimeSharing)
			}
			score, status := pl.Score(context.Background(), cycle, pod, nodeInfo)
			if !status.IsSuccess() {
				t.Fatalf("Score: %v", status)
			}
			want := int64(math.Round(*tc.Expected * float64(pl.args.Resolution)))
			if score != want {
				t.Fatalf("raw score %d, want %d (added interference %v)", score, want, *tc.Expected)
			}
		})
	}
}

// TestFixtureAddedInterference checks the formula itself to 1e-9, without
// the rounding to Resolution: the same-node term over the node's pods plus
// the cross-node term over the pods of the other nodes of its group; for the
// time_sharing cases, the rise of the time-shared score (fixtureTimeShared).
func TestFixtureAddedInterference(t *testing.T) {
	pl := newPlugin(t, "")
	logger := klog.Background()
	timeShared := 0
	for _, tc := range loadCases(t) {
		if tc.Expected == nil {
			continue
		}
		if tc.TimeSharing {
			timeShared++
			if got := fixtureTimeShared(t, pl, tc); math.Abs(got-*tc.Expected) > 1e-9 {
				t.Errorf("%s: added time-shared cost %v, want %v", tc.Name, got, *tc.Expected)
			}
			continue
		}
		profile, ok := pl.profileOf(logger, makePod("p", tc.Pod))
		if !ok && *tc.Expected != 0 {
			t.Fatalf("%s: no usable profile", tc.Name)
		}
		profiles := func(prefix string, pods []fixturePod) []Profile {
			var out []Profile
			for i, fp := range pods {
				if other, ok := pl.profileOf(logger, makePod(fmt.Sprintf("%s-%s%d", tc.Name, prefix, i), fp)); ok {
					out = append(out, other)
				}
			}
			return out
		}
		others := profiles("o", tc.NodePods)
		var shared []Profile // the pods on the other nodes of the candidate's group
		if tc.Sharing != nil {
			if value, labelled := tc.NodeLabels[tc.Sharing.Label]; labelled {
				for j, node := range tc.OtherNodes {
					if other, labelled := node.Labels[tc.Sharing.Label]; labelled && other == value {
						shared = append(shared, profiles(fmt.Sprintf("g%d-", j), node.Pods)...)
					}
				}
			}
		}
		got := AddedInterference(profile, others) + CrossNodeInterference(profile, tc.Sharing.Shares(), shared)
		if math.Abs(got-*tc.Expected) > 1e-9 {
			t.Errorf("%s: added interference %v, want %v", tc.Name, got, *tc.Expected)
		}
	}
	if timeShared == 0 {
		t.Fatal("the fixture has no time_sharing case")
	}
}

// TestNormalizeScorePrefersLeastInterference: the node with the least added
// interference gets MaxNodeScore, the most 0.
func TestNormalizeScorePrefersLeastInterference(t *testing.T) {
	pl := newPlugin(t, "")
	scores := framework.NodeScoreList{{Name: "busy", Score: 2000}, {Name: "free", Score: 0}, {Name: "half", Score: 1000}}
	if status := pl.NormalizeScore(context.Background(), nil, nil, scores); !status.IsSuccess() {
		t.Fatal(status)
	}
	want := map[string]int64{"busy": 0, "free": 100, "half": 50}
	for _, s := range scores {
		if s.Score != want[s.Name] {
			t.Errorf("%s: %d, want %d", s.Name, s.Score, want[s.Name])
		}
	}
}

// TestScoreSeesAssumedPods: a pod the scheduler assumed onto a node (in
// NodeInfo, not yet bound) counts, which is what keeps a burst apart.
func TestScoreSeesAssumedPods(t *testing.T) {
	pl := newPlugin(t, "")
	cpu := func(name string) *v1.Pod {
		return st.MakePod().Namespace("default").Name(name).UID(name).Label("interference.orchestrator/type", "cpu").Obj()
	}
	assumed := cpu("assumed")
	assumed.Spec.NodeName = "a"
	withAssumed := framework.NewNodeInfo(assumed)
	withAssumed.SetNode(st.MakeNode().Name("a").Obj())
	empty := framework.NewNodeInfo()
	empty.SetNode(st.MakeNode().Name("b").Obj())
	pod := cpu("incoming")
	cycle := framework.NewCycleState()
	if status := pl.PreScore(context.Background(), cycle, pod, nil); !status.IsSuccess() {
		t.Fatal(status)
	}
	a, _ := pl.Score(context.Background(), cycle, pod, withAssumed)
	b, _ := pl.Score(context.Background(), cycle, pod, empty)
	if a <= b {
		t.Fatalf("node with an assumed cpu pod scored %d, empty node %d: want higher cost on the first", a, b)
	}
}

// TestScoreIgnoresThePodItself: during preemption checks the pod may already
// be in the NodeInfo; it does not interfere with itself.
func TestScoreIgnoresThePodItself(t *testing.T) {
	pl := newPlugin(t, "")
	pod := st.MakePod().Namespace("default").Name("p").UID("p").Label("interference.orchestrator/type", "cpu").Obj()
	nodeInfo := framework.NewNodeInfo(pod)
	nodeInfo.SetNode(st.MakeNode().Name("a").Obj())
	cycle := framework.NewCycleState()
	pl.PreScore(context.Background(), cycle, pod, nil)
	if score, _ := pl.Score(context.Background(), cycle, pod, nodeInfo); score != 0 {
		t.Fatalf("score %d, want 0", score)
	}
}

func TestArgs(t *testing.T) {
	plugintest.CheckArgs(t, Name, New, map[string]string{
		`{}`:                                  "",
		`{"resolution": 10}`:                  "",
		`{"resolution": 0}`:                   "args.resolution",
		`{"profileAnnotation": "not a key!"}`: "args.profileAnnotation",
		`{"typeLabel": ""}`:                   "args.typeLabel",
		`{"resolutoin": 10}`:                  "unknown field",
		`{"sharing": {"label": "example.com/host", "pressures": {"memory_bandwidth": 0.6, "llc": 0.5}}}`: "",
		`{"sharing": {"label": "host", "pressures": {"cpu": 0, "disk_io": 1}}}`:                          "",
		`{"sharing": {"label": "host"}}`:                                  "",
		`{"sharing": {"pressures": {"llc": 0.5}}}`:                        `args.sharing.label: "" is not a valid label key`,
		`{"sharing": {"label": "not a key!", "pressures": {"llc": 0.5}}}`: `args.sharing.label: "not a key!"`,
		`{"sharing": {"label": "host", "pressures": {"gpu": 0.5}}}`:       `args.sharing.pressures: unknown resource "gpu": expected one of cpu, memory_bandwidth, llc, disk_io, network_io`,
		`{"sharing": {"label": "host", "pressures": {"llc": 1.5}}}`:       "args.sharing.pressures.llc: must be a number from 0",
		`{"sharing": {"label": "host", "pressures": {"cpu": -0.1}}}`:      "args.sharing.pressures.cpu: must be a number from 0",
		`{"sharing": {"label": "host", "pressures": {"cpu": .nan}}}`:      "unsupported value: NaN",
		`{"sharing": {"label": "host", "pressures": {"cpu": "0.5"}}}`:     "sharing.pressures",
		`{"sharing": {"label": "host", "presures": {"cpu": 0.5}}}`:        "unknown field",
	})
}

// TestSharingValidateNotANumber: args built in code (not decoded, where
// JSON has no NaN nor infinity) are checked too.
func TestSharingValidateNotANumber(t *testing.T) {
	for _, share := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		args := DefaultArgs()
		args.Sharing = &SharingArgs{Label: "host", Pressures: map[string]float64{"llc": share}}
		if err := args.Validate(); err == nil || !strings.Contains(err.Error(), "InterferenceAware: args.sharing.pressures.llc: must be a number from 0") {
			t.Errorf("%v: %v", share, err)
		}
	}
}

// loggingContext collects the lines logged through the context's logger.
func loggingContext(lines *[]string) context.Context {
	logger := funcr.New(func(prefix, args string) { *lines = append(*lines, prefix+args) }, funcr.Options{})
	return klog.NewContext(context.Background(), logger)
}

func nodeWith(name string, pods ...*v1.Pod) *framework.NodeInfo {
	nodeInfo := framework.NewNodeInfo(pods...)
	nodeInfo.SetNode(st.MakeNode().Name(name).Obj())
	return nodeInfo
}

func profiled(name, annotation string) *v1.Pod {
	return st.MakePod().Namespace("default").Name(name).UID(name).Annotation("interference.orchestrator/profile", annotation).Obj()
}

// TestScoreParsesEachPodOnce: over many cycles on many nodes, each pod's
// annotation is parsed once (Score reads the per-node sums, not the pods).
func TestScoreParsesEachPodOnce(t *testing.T) {
	pl := newPlugin(t, "")
	var nodes []*framework.NodeInfo
	pods := 0
	for n := 0; n < 50; n++ {
		var onNode []*v1.Pod
		for i := 0; i < 4; i++ {
			onNode = append(onNode, profiled(fmt.Sprintf("n%d-p%d", n, i), fmt.Sprintf(`{"cpu": %.2f}`, float64(i+1)/10)))
			pods++
		}
		nodes = append(nodes, nodeWith(fmt.Sprintf("n%d", n), onNode...))
	}
	for cycle := 0; cycle < 20; cycle++ {
		pod := profiled(fmt.Sprintf("incoming-%d", cycle), `{"cpu": 1}`)
		state := framework.NewCycleState()
		if status := pl.PreScore(context.Background(), state, pod, nil); !status.IsSuccess() {
			t.Fatal(status)
		}
		pods++
		for _, nodeInfo := range nodes {
			score, status := pl.Score(context.Background(), state, pod, nodeInfo)
			if !status.IsSuccess() {
				t.Fatal(status)
			}
			if want := int64(1000); score != want { // 0.1+0.2+0.3+0.4 of cpu
				t.Fatalf("score %d, want %d", score, want)
			}
		}
	}
	if got := pl.pods.parses.Load(); got != int64(pods) {
		t.Fatalf("%d parses for %d pods: want one per pod", got, pods)
	}
}

// TestScoreFollowsTheNodeInfo: a pod assumed onto a node after its sums were
// computed counts in the next cycle (a new NodeInfo generation), and a pod
// whose annotation changed is read again.
func TestScoreFollowsTheNodeInfo(t *testing.T) {
	pl := newPlugin(t, "")
	nodeInfo := nodeWith("a", profiled("first", `{"cpu": 0.5}`))
	pod := profiled("incoming", `{"cpu": 1}`)
	score := func() int64 {
		t.Helper()
		state := framework.NewCycleState()
		if status := pl.PreScore(context.Background(), state, pod, nil); !status.IsSuccess() {
			t.Fatal(status)
		}
		value, status := pl.Score(context.Background(), state, pod, nodeInfo)
		if !status.IsSuccess() {
			t.Fatal(status)
		}
		return value
	}
	if got := score(); got != 500 {
		t.Fatalf("score %d, want 500", got)
	}
	nodeInfo.AddPod(profiled("second", `{"cpu": 0.25}`))
	if got := score(); got != 750 {
		t.Fatalf("after a pod was added: score %d, want 750", got)
	}
	changed := profiled("second", `{"cpu": 0.75}`)
	if err := nodeInfo.RemovePod(klog.Background(), nodeInfo.Pods[1].GetPod()); err != nil {
		t.Fatal(err)
	}
	nodeInfo.AddPod(changed)
	if got := score(); got != 1250 {
		t.Fatalf("after the pod's annotation changed: score %d, want 1250", got)
	}
	if err := nodeInfo.RemovePod(klog.Background(), changed); err != nil {
		t.Fatal(err)
	}
	if got := score(); got != 500 {
		t.Fatalf("after a pod was removed: score %d, want 500", got)
	}
}

// TestBadProfilesAreNeutralAndLoggedOncePerPod: a malformed or oversized
// annotation makes its pod neutral, as the pod scheduled (PreScore skips)
// and as a pod on a node (it counts zero); one log line per pod however many
// cycles meet it, and never an error status.
func TestBadProfilesAreNeutralAndLoggedOncePerPod(t *testing.T) {
	pl := newPlugin(t, "")
	var lines []string
	ctx := loggingContext(&lines)
	oversized := `{"cpu": 0.5` + strings.Repeat(" ", MaxAnnotationBytes) + `}`
	badOnNode := []*v1.Pod{profiled("not-json", "not json"), profiled("oversized", oversized), profiled("good", `{"cpu": 0.5}`)}
	nodeInfo := nodeWith("a", badOnNode...)
	for cycle := 0; cycle < 3; cycle++ {
		for _, bad := range []*v1.Pod{profiled("incoming-bad", "{cpu: 1}"), profiled("incoming-big", oversized)} {
			if status := pl.PreScore(ctx, framework.NewCycleState(), bad, nil); !status.IsSkip() {
				t.Fatalf("%s: PreScore %v, want a skip (neutral)", bad.Name, status)
			}
		}
		pod := profiled("incoming", `{"cpu": 1}`)
		state := framework.NewCycleState()
		if status := pl.PreScore(ctx, state, pod, nil); !status.IsSuccess() {
			t.Fatal(status)
		}
		nodeInfo.AddPod(profiled(fmt.Sprintf("filler-%d", cycle), `{"llc": 1}`)) // a new generation each cycle
		score, status := pl.Score(ctx, state, pod, nodeInfo)
		if !status.IsSuccess() || score != 500 {
			t.Fatalf("Score %d (%v), want 500: only the good pod counts", score, status)
		}
	}
	logged := map[string]int{}
	for _, line := range lines {
		for _, name := range []string{"not-json", "oversized", "incoming-bad", "incoming-big"} {
			if strings.Contains(line, `"name"="`+name+`"`) {
				logged[name]++
			}
		}
	}
	for _, name := range []string{"not-json", "oversized", "incoming-bad", "incoming-big"} {
		if logged[name] != 1 {
			t.Errorf("%s logged %d times, want once: %q", name, logged[name], lines)
		}
	}
}

// hostNode is a node named name with the label host=<host> ("" for none).
func hostNode(name, host string, pods ...*v1.Pod) *framework.NodeInfo {
	w := st.MakeNode().Name(name)
	if host != "" {
		w = w.Label("host", host)
	}
	nodeInfo := framework.NewNodeInfo(pods...)
	nodeInfo.SetNode(w.Obj())
	return nodeInfo
}

// scoreAll runs PreScore with the nodes given (those that passed Filter) and
// Score on each of them; the raw scores by node name.
func scoreAll(t *testing.T, pl *Plugin, pod *v1.Pod, nodes ...*framework.NodeInfo) map[string]int64 {
	t.Helper()
	var infos []fwk.NodeInfo
	for _, nodeInfo := range nodes {
		infos = append(infos, nodeInfo)
	}
	cycle := framework.NewCycleState()
	if status := pl.PreScore(context.Background(), cycle, pod, infos); !status.IsSuccess() {
		t.Fatalf("PreScore: %v", status)
	}
	scores := map[string]int64{}
	for _, nodeInfo := range nodes {
		score, status := pl.Score(context.Background(), cycle, pod, nodeInfo)
		if !status.IsSuccess() {
			t.Fatalf("Score: %v", status)
		}
		scores[nodeInfo.Node().Name] = score
	}
	return scores
}

const hostSharing = `{"sharing": {"label": "host", "pressures": {"memory_bandwidth": 0.5, "llc": 0.25}}}`

// TestWithoutSharingNodesAreNeverListed: no sharing, or every share 0, is
// the plugin of before: PreScore never walks the snapshot's nodes, and the
// scores are the same-node term alone.
func TestWithoutSharingNodesAreNeverListed(t *testing.T) {
	for _, raw := range []string{"", `{"resolution": 1000}`, `{"sharing": {"label": "host", "pressures": {"memory_bandwidth": 0, "llc": 0}}}`, `{"sharing": {"label": "host"}}`} {
		pl := newPlugin(t, raw)
		listed := 0
		pl.allNodes = func() ([]fwk.NodeInfo, error) {
			listed++
			return nil, fmt.Errorf("listed")
		}
		a1 := hostNode("a1", "a", profiled("a1-p", `{"memory_bandwidth": 1}`))
		a2 := hostNode("a2", "a", profiled("a2-p", `{"memory_bandwidth": 0.5}`))
		scores := scoreAll(t, pl, profiled("incoming", `{"memory_bandwidth": 1}`), a1, a2)
		plugintest.CheckScores(t, scores, map[string]int64{"a1": 1000, "a2": 500})
		if listed > 0 || pl.sharing {
			t.Errorf("%s: nodes listed %d times (sharing %v), want never", raw, listed, pl.sharing)
		}
	}
}

// TestSharingSumsTheWholeGroup: a group's sum counts every node of the
// snapshot, also those Filter left out; other groups and nodes without the
// label add nothing; without a snapshot to list, the nodes PreScore gets.
func TestSharingSumsTheWholeGroup(t *testing.T) {
	memory := func(name string) *v1.Pod { return profiled(name, `{"memory_bandwidth": 1, "llc": 1}`) }
	a1 := hostNode("a1", "a", memory("a1-p"), memory("a1-q")) // filtered out
	a2 := hostNode("a2", "a", memory("a2-p"))
	a3 := hostNode("a3", "a")
	b1 := hostNode("b1", "b", memory("b1-p"))
	alone := hostNode("alone", "", memory("alone-p"))
	pod := profiled("incoming", `{"memory_bandwidth": 1, "llc": 1}`)
	pl := newPlugin(t, hostSharing)
	pl.allNodes = func() ([]fwk.NodeInfo, error) { return []fwk.NodeInfo{a1, a2, a3, b1, alone}, nil }
	// One pod on the node adds 2; one on another node of the host 0.5 + 0.25.
	plugintest.CheckScores(t, scoreAll(t, pl, pod, a2, a3, b1, alone), map[string]int64{
		"a2": 2000 + 2*750, "a3": 3 * 750, "b1": 2000, "alone": 2000,
	})
	pl.allNodes = nil
	plugintest.CheckScores(t, scoreAll(t, pl, pod, a2, a3, b1, alone), map[string]int64{
		"a2": 2000, "a3": 750, "b1": 2000, "alone": 2000,
	})
	// A new pod on a node the group's sum was taken from counts next cycle.
	pl.allNodes = func() ([]fwk.NodeInfo, error) { return []fwk.NodeInfo{a1, a2, a3, b1, alone}, nil }
	a1.AddPod(memory("a1-r"))
	plugintest.CheckScores(t, scoreAll(t, pl, pod, a3), map[string]int64{"a3": 4 * 750})
	pl.allNodes = func() ([]fwk.NodeInfo, error) { return nil, fmt.Errorf("snapshot gone") }
	if status := pl.PreScore(context.Background(), framework.NewCycleState(), pod, nil); status.IsSuccess() ||
		!strings.Contains(status.Message(), "InterferenceAware: listing nodes: snapshot gone") {
		t.Fatalf("PreScore with a failing node list: %v", status)
	}
}

// TestSharingIgnoresThePodItself: the pod being scheduled, already in a
// NodeInfo, interferes with itself neither on its node nor across the host.
func TestSharingIgnoresThePodItself(t *testing.T) {
	pod := profiled("p", `{"memory_bandwidth": 1}`)
	a1 := hostNode("a1", "a", pod)
	a2 := hostNode("a2", "a")
	pl := newPlugin(t, hostSharing)
	pl.allNodes = func() ([]fwk.NodeInfo, error) { return []fwk.NodeInfo{a1, a2}, nil }
	plugintest.CheckScores(t, scoreAll(t, pl, pod, a1, a2), map[string]int64{"a1": 0, "a2": 0})
}

// TestSharingThroughTheSnapshot: in the framework, New lists the nodes
// from the handle's snapshot: a node on the host of a memory pod is worse
// than an empty host, better than the pod's own node.
func TestSharingThroughTheSnapshot(t *testing.T) {
	nodes := []*v1.Node{
		st.MakeNode().Name("a1").Label("host", "a").Obj(),
		st.MakeNode().Name("a2").Label("host", "a").Obj(),
		st.MakeNode().Name("b1").Label("host", "b").Obj(),
	}
	existing := st.MakePod().Namespace("default").Name("m").UID("m").Node("a1").
		Annotation("interference.orchestrator/profile", `{"memory_bandwidth": 1}`).Obj()
	args := `{"sharing": {"label": "host", "pressures": {"memory_bandwidth": 0.5}}}`
	cluster := plugintest.New(t, Name, New, pluginargs.Unknown(args), []*v1.Pod{existing}, nodes)
	pod := profiled("incoming", `{"memory_bandwidth": 1}`)
	plugintest.CheckScores(t, cluster.Scores(t, pod), map[string]int64{"a1": 0, "a2": 50, "b1": 100})
}
