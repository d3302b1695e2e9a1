package interference

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
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
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "tests", "fixtures", "interference_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []fixtureCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) == 0 {
		t.Fatal("no cases in the fixture")
	}
	return file.Cases
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
	cache := newAnnotationCache()
	const annotation, label = "interference.orchestrator/profile", "interference.orchestrator/type"
	for _, tc := range loadCases(t) {
		if tc.Expected == nil {
			continue
		}
		profile, _, err := podProfile(makePod("p", tc.Pod), annotation, label, cache)
		if err != nil {
			t.Fatalf("%s: %v", tc.Name, err)
		}
		var others []Profile
		for _, fp := range tc.NodePods {
			other, _, err := podProfile(makePod("o", fp), annotation, label, cache)
			if err == nil {
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
	for _, tc := range []struct {
		raw     string
		wantErr string
	}{
		{`{}`, ""},
		{`{"resolution": 10}`, ""},
		{`{"resolution": 0}`, "args.resolution"},
		{`{"profileAnnotation": "not a key!"}`, "args.profileAnnotation"},
		{`{"typeLabel": ""}`, "args.typeLabel"},
		{`{"resolutoin": 10}`, "unknown field"},
	} {
		_, err := New(context.Background(), pluginargs.Unknown(tc.raw), nil)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.raw, err)
			}
			continue
		}
		if err == nil || !contains(err.Error(), tc.wantErr) || !contains(err.Error(), Name) {
			t.Errorf("%s: error %v, want one naming %s and %q", tc.raw, err, Name, tc.wantErr)
		}
	}
}

func contains(s, sub string) bool {
	return strings.Contains(s, sub)
}

