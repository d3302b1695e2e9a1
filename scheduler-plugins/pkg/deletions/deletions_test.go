package deletions

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

// handle is a framework.Handle with only an informer factory.
type handle struct {
	framework.Handle
	factory informers.SharedInformerFactory
}

func (h handle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }

func TestWithoutInformersDoesNothing(t *testing.T) {
	if err := Nodes("Test", nil, func(*v1.Node) { t.Error("called") }); err != nil {
		t.Fatal(err)
	}
	if err := Pods("Test", handle{}, func(*v1.Pod) { t.Error("called") }); err != nil {
		t.Fatal(err)
	}
}

func TestForgetsDeletedNodesAndPods(t *testing.T) {
	node := st.MakeNode().Name("n1").Obj()
	pod := st.MakePod().Namespace("default").Name("p1").UID("p1").Obj()
	client := fake.NewClientset(node, pod)
	factory := informers.NewSharedInformerFactory(client, 0)
	nodes, pods := make(chan string, 1), make(chan string, 1)
	h := handle{factory: factory}
	if err := Nodes("Test", h, func(n *v1.Node) { nodes <- n.Name }); err != nil {
		t.Fatal(err)
	}
	if err := Pods("Test", h, func(p *v1.Pod) { pods <- p.Name }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if err := client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Pods("default").Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for what, ch := range map[string]chan string{"node": nodes, "pod": pods} {
		select {
		case name := <-ch:
			if name != "n1" && name != "p1" {
				t.Errorf("%s: forgot %q", what, name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the deleted %s was not forgotten", what)
		}
	}
}

func TestTombstoneIsUnwrapped(t *testing.T) {
	var got []string
	handler := onDelete(func(n *v1.Node) { got = append(got, n.Name) })
	handler.OnDelete(st.MakeNode().Name("direct").Obj())
	handler.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "tomb", Obj: st.MakeNode().Name("tomb").Obj()})
	handler.OnDelete(st.MakePod().Name("a-pod").Obj()) // another type: ignored
	if len(got) != 2 || got[0] != "direct" || got[1] != "tomb" {
		t.Fatalf("forgot %v, want [direct tomb]", got)
	}
}
