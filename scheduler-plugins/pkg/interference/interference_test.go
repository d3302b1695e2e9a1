package interference

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
	"interference.orchestrator/scheduler-plugins/pkg/plugintest"
)

// fixturePod is a pod as tests/fixtures/interference_cases.json gives it.
type fixturePod struct {
	Annotations map[string]string `json:"annotations"`
	Labels      map[string]string `json:"labels"`
}

type fixtureCase struct {
	Name     string       `json:"name"`
	Pod      fixturePod   `json:"pod"`
	NodePods []fixturePod `json:"node_pods"`
	Expected *float64     `json:"expected"`
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
// without a usable profile makes PreScore skip.
func TestFixtureCases(t *testing.T) {
	for _, tc := range loadCases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			pl := newPlugin(t, "")
			pod := makePod("incoming", tc.Pod)
			var existing []*v1.Pod
			for i, fp := range tc.NodePods {
				existing = append(existing, makePod("existing-"+string(rune('a'+i)), fp))
			}
			nodeInfo := framework.NewNodeInfo(existing...)
			nodeInfo.SetNode(st.MakeNode().Name("n").Obj())
			cycle := framework.NewCycleState()
			status := pl.PreScore(context.Background(), cycle, pod, []fwk.NodeInfo{nodeInfo})
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
// the rounding to Resolution.
func TestFixtureAddedInterference(t *testing.T) {
	pl := newPlugin(t, "")
	logger := klog.Background()
	for _, tc := range loadCases(t) {
		if tc.Expected == nil {
			continue
		}
		profile, ok := pl.profileOf(logger, makePod("p", tc.Pod))
		if !ok && *tc.Expected != 0 {
			t.Fatalf("%s: no usable profile", tc.Name)
		}
		var others []Profile
		for i, fp := range tc.NodePods {
			if other, ok := pl.profileOf(logger, makePod(fmt.Sprintf("%s-o%d", tc.Name, i), fp)); ok {
				others = append(others, other)
			}
		}
		if got := AddedInterference(profile, others); math.Abs(got-*tc.Expected) > 1e-9 {
			t.Errorf("%s: added interference %v, want %v", tc.Name, got, *tc.Expected)
		}
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
	})
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
