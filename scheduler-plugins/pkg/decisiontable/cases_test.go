package decisiontable

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"interference.orchestrator/scheduler-plugins/pkg/plugintest"
)

// The shape of tests/fixtures/scheduling_cases.json (its description says
// what each field means); tests/unit/extender/test_scheduling_cases.py reads
// the same file for the HTTP extender.
type casePod struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	App         string            `json:"app"`
	GPUs        int64             `json:"gpus"`
}

type caseNode struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
	GPUs   int64             `json:"gpus"`
}

type schedulingCase struct {
	Name     string               `json:"name"`
	Policies []string             `json:"policies"`
	Nodes    []caseNode           `json:"nodes"`
	NodePods map[string][]casePod `json:"node_pods"`
	Pod      casePod              `json:"pod"`
	Expected struct {
		Feasible []string `json:"feasible"`
		Best     []string `json:"best"`
	} `json:"expected"`
}

// podOf builds a fixture pod: its app is the ReplicaSet that controls it, its
// `gpus` the nvidia.com/gpu limit (and request) of its container.
func podOf(name string, spec casePod, node string) *v1.Pod {
	w := st.MakePod().Namespace("default").Name(name).UID("uid-" + name).Container("main")
	for k, v := range spec.Labels {
		w = w.Label(k, v)
	}
	for k, v := range spec.Annotations {
		w = w.Annotation(k, v)
	}
	if spec.App != "" {
		w = w.OwnerReference(spec.App, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	}
	if node != "" {
		w = w.Node(node)
	}
	pod := w.Obj()
	if spec.GPUs > 0 {
		gpus := *resource.NewQuantity(spec.GPUs, resource.DecimalSI)
		pod.Spec.Containers[0].Resources = v1.ResourceRequirements{
			Requests: v1.ResourceList{"nvidia.com/gpu": gpus},
			Limits:   v1.ResourceList{"nvidia.com/gpu": gpus},
		}
	}
	return pod
}

func nodeOf(spec caseNode) *v1.Node {
	resources := map[v1.ResourceName]string{v1.ResourceCPU: "16", v1.ResourceMemory: "64Gi", v1.ResourcePods: "110"}
	if spec.GPUs > 0 {
		resources["nvidia.com/gpu"] = fmt.Sprint(spec.GPUs)
	}
	w := st.MakeNode().Name(spec.Name).Capacity(resources)
	for k, v := range spec.Labels {
		w = w.Label(k, v)
	}
	return w.Obj()
}

// TestSchedulingCases: the four plugins, with the role's weights, make each
// shared case's decision: the nodes that pass filtering and the ones with the
// highest total score.
func TestSchedulingCases(t *testing.T) {
	for _, tc := range plugintest.LoadCases[schedulingCase](t, "scheduling_cases.json") {
		t.Run(tc.Name, func(t *testing.T) {
			var nodes []*v1.Node
			for _, spec := range tc.Nodes {
				nodes = append(nodes, nodeOf(spec))
			}
			var pods []*v1.Pod
			for node, specs := range tc.NodePods {
				for i, spec := range specs {
					pods = append(pods, podOf(fmt.Sprintf("%s-%d", node, i), spec, node))
				}
			}
			cluster := plugintest.NewProfile(t, rolePlugins(), pods, nodes)
			feasible, totals := cluster.Decision(t, podOf("incoming", tc.Pod, ""))
			best := []string{}
			var top int64
			for name, total := range totals {
				if len(best) == 0 || total > top {
					best, top = []string{name}, total
				} else if total == top {
					best = append(best, name)
				}
			}
			if feasible == nil {
				feasible = []string{}
			}
			sort.Strings(feasible)
			sort.Strings(best)
			if !reflect.DeepEqual(feasible, tc.Expected.Feasible) {
				t.Errorf("feasible %v, want %v", feasible, tc.Expected.Feasible)
			}
			if !reflect.DeepEqual(best, tc.Expected.Best) {
				t.Errorf("best %v, want %v (total scores %v)", best, tc.Expected.Best, totals)
			}
		})
	}
}
