package zone

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
	"interference.orchestrator/scheduler-plugins/pkg/plugintest"
)

var replicaSet = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func nodes() []*v1.Node {
	return []*v1.Node{
		st.MakeNode().Name("a1").Label(v1.LabelTopologyZone, "a").Obj(),
		st.MakeNode().Name("a2").Label(v1.LabelTopologyZone, "a").Obj(),
		st.MakeNode().Name("b1").Label(v1.LabelTopologyZone, "b").Obj(),
		st.MakeNode().Name("c1").Label(v1.LabelTopologyZone, "c").Obj(),
		st.MakeNode().Name("nozone").Obj(),
	}
}

func pod(name, owner, node string) *v1.Pod {
	w := st.MakePod().Namespace("default").Name(name).UID(name).Node(node)
	if owner != "" {
		w = w.OwnerReference(owner, replicaSet)
	}
	return w.Obj()
}

func TestSpreadsAnOwnersPodsAcrossZones(t *testing.T) {
	existing := []*v1.Pod{
		pod("web-1", "web", "a1"), pod("web-2", "web", "a2"), pod("web-3", "web", "b1"),
		pod("other-1", "other", "c1"), pod("other-2", "other", "c1"), // another owner does not count
	}
	c := plugintest.New(t, Name, New, nil, existing, nodes())
	scores := c.Scores(t, pod("web-4", "web", ""))
	// counts: a=2, b=1, c=0; the node without a zone gets the worst count.
	want := map[string]int64{"a1": 0, "a2": 0, "b1": 50, "c1": 100, "nozone": 0}
	for name, score := range want {
		if scores[name] != score {
			t.Errorf("%s: %d, want %d (all: %v)", name, scores[name], score, scores)
		}
	}
}

func TestBarePodIsNotScored(t *testing.T) {
	c := plugintest.New(t, Name, New, nil, nil, nodes())
	if scores := c.Scores(t, pod("bare", "", "")); len(scores) != 0 {
		t.Fatalf("a pod without an owner was scored: %v", scores)
	}
}

func TestCustomTopologyKey(t *testing.T) {
	racks := []*v1.Node{
		st.MakeNode().Name("r1").Label("example.com/rack", "1").Obj(),
		st.MakeNode().Name("r2").Label("example.com/rack", "2").Obj(),
	}
	c := plugintest.New(t, Name, New, pluginargs.Unknown(`{"topologyKey": "example.com/rack"}`),
		[]*v1.Pod{pod("web-1", "web", "r1")}, racks)
	scores := c.Scores(t, pod("web-2", "web", ""))
	if scores["r1"] != 0 || scores["r2"] != 100 {
		t.Fatalf("scores %v", scores)
	}
}

func TestArgs(t *testing.T) {
	for raw, want := range map[string]string{
		`{"topologyKey": "topology.kubernetes.io/region"}`: "",
		`{"topologyKey": ""}`:                              "args.topologyKey",
		`{"topology_key": "x"}`:                            "unknown field",
	} {
		_, err := New(context.Background(), pluginargs.Unknown(raw), nil)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", raw, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), Name) {
			t.Errorf("%s: error %v, want one naming %s and %s", raw, err, Name, want)
		}
	}
}
