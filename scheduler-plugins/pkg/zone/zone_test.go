package zone

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
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
	plugintest.CheckScores(t, scores, map[string]int64{"a1": 0, "a2": 0, "b1": 50, "c1": 100, "nozone": 0})
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
	plugintest.CheckArgs(t, Name, New, map[string]string{
		`{"topologyKey": "topology.kubernetes.io/region"}`: "",
		`{"topologyKey": ""}`:                              "args.topologyKey",
		`{"topology_key": "x"}`:                            "unknown field",
	})
}

// TestCountsFollowTheSnapshot: the per-node counts are kept between cycles
// and counted again when a node's NodeInfo changes (a pod assumed onto it, a
// pod going away); the pod being scheduled and pods being deleted never count.
func TestCountsFollowTheSnapshot(t *testing.T) {
	leaving := pod("web-0", "web", "b1")
	now := metav1.Now()
	leaving.DeletionTimestamp = &now
	incoming := pod("web-9", "web", "")
	incoming.Spec.NodeName = "c1" // already in c1's NodeInfo: it does not count against itself
	c := plugintest.New(t, Name, New, nil, []*v1.Pod{pod("web-1", "web", "a1"), leaving, incoming}, nodes())
	want := func(expected map[string]int64) {
		t.Helper()
		plugintest.CheckScores(t, c.Scores(t, incoming), expected)
	}
	// counts a=1, b=0 (web-0 is being deleted), c=0 (web-9 is the pod itself).
	want(map[string]int64{"a1": 0, "b1": 100, "c1": 100})
	info, err := c.Snapshot.NodeInfos().Get("b1")
	if err != nil {
		t.Fatal(err)
	}
	assumed := pod("web-2", "web", "b1")
	info.(*framework.NodeInfo).AddPod(assumed)
	info.(*framework.NodeInfo).AddPod(pod("web-3", "web", "b1"))
	// counts a=1, b=2, c=0.
	want(map[string]int64{"a1": 50, "b1": 0, "c1": 100})
	if err := info.(*framework.NodeInfo).RemovePod(klog.Background(), assumed); err != nil {
		t.Fatal(err)
	}
	// counts a=1, b=1, c=0.
	want(map[string]int64{"a1": 0, "b1": 0, "c1": 100})
}
