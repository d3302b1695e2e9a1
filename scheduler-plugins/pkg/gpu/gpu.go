// Package gpu is the GPUScheduler plugin: GPU pods go only to nodes that have
// GPUs and prefer the most GPU memory; other pods stay off GPU nodes when
// another node fits.
package gpu

import (
	"context"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"interference.orchestrator/scheduler-plugins/pkg/cyclestate"
	"interference.orchestrator/scheduler-plugins/pkg/nodescore"
	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
)

// Name is the plugin name used in the KubeSchedulerConfiguration.
const Name = "GPUScheduler"

// mebibyte is the unit of the memory label's raw score.
const mebibyte = 1 << 20

// Args configure GPUScheduler.
type Args struct {
	// ResourceName is the extended resource a GPU pod requests.
	ResourceName string `json:"resourceName,omitempty"`
	// MemoryLabel is the node label with the GPU memory of one device: a
	// plain number in MiB (as NVIDIA's feature discovery writes it) or a
	// quantity such as 80Gi.
	MemoryLabel string `json:"memoryLabel,omitempty"`
	// AvoidGPUNodesForOtherPods scores GPU nodes 0 and others MaxNodeScore
	// for pods that request no GPU, keeping GPU nodes free when another node
	// fits. A score, not a filter: a pod still lands on a GPU node when
	// nothing else fits.
	AvoidGPUNodesForOtherPods *bool `json:"avoidGPUNodesForOtherPods,omitempty"`
}

// DefaultArgs are the args when the KubeSchedulerConfiguration gives none.
func DefaultArgs() Args {
	avoid := true
	return Args{ResourceName: "nvidia.com/gpu", MemoryLabel: "gpu.nvidia.com/memory", AvoidGPUNodesForOtherPods: &avoid}
}

// Validate names the first bad arg.
func (a Args) Validate() error {
	if err := pluginargs.QualifiedName(Name, "resourceName", a.ResourceName, "resource name"); err != nil {
		return err
	}
	return pluginargs.QualifiedName(Name, "memoryLabel", a.MemoryLabel, "label key")
}

// Plugin is GPUScheduler.
type Plugin struct {
	args     Args
	resource v1.ResourceName
	avoid    bool
}

var (
	_ framework.PreFilterPlugin = &Plugin{}
	_ framework.FilterPlugin    = &Plugin{}
	_ framework.PreScorePlugin  = &Plugin{}
	_ framework.ScorePlugin     = &Plugin{}
)

// New builds the plugin from its args (defaults for missing fields).
func New(_ context.Context, obj runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	args, err := pluginargs.Load(Name, obj, DefaultArgs())
	if err != nil {
		return nil, err
	}
	return &Plugin{args: args, resource: v1.ResourceName(args.ResourceName), avoid: *args.AvoidGPUNodesForOtherPods}, nil
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }

type state struct{ wantsGPU bool }

func (s *state) Clone() fwk.StateData { return s }

// requestsGPU is true when any container asks for the GPU resource.
func (p *Plugin) requestsGPU(pod *v1.Pod) bool {
	for _, containers := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range containers {
			if q, ok := c.Resources.Requests[p.resource]; ok && !q.IsZero() {
				return true
			}
			if q, ok := c.Resources.Limits[p.resource]; ok && !q.IsZero() {
				return true
			}
		}
	}
	return false
}

// PreFilter skips Filter for pods that request no GPU.
func (p *Plugin) PreFilter(_ context.Context, cycle fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*framework.PreFilterResult, *fwk.Status) {
	wants := p.requestsGPU(pod)
	cyclestate.Write(cycle, Name, &state{wantsGPU: wants})
	if !wants {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// PreFilterExtensions: the plugin keeps no per-node state to update.
func (p *Plugin) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter keeps GPU pods to nodes whose allocatable has the GPU resource.
func (p *Plugin) Filter(_ context.Context, _ fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if hasGPU(nodeInfo.Node(), p.resource) {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node has no %s", p.resource))
}

func hasGPU(node *v1.Node, name v1.ResourceName) bool {
	if node == nil {
		return false
	}
	q, ok := node.Status.Allocatable[name]
	return ok && !q.IsZero()
}

// PreScore decides whether Score has anything to say: GPU pods are scored by
// memory, other pods only when AvoidGPUNodesForOtherPods is on.
func (p *Plugin) PreScore(_ context.Context, cycle fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	wants := p.requestsGPU(pod)
	if !wants && !p.avoid {
		return fwk.NewStatus(fwk.Skip)
	}
	cyclestate.Write(cycle, Name, &state{wantsGPU: wants})
	return nil
}

// Score: for a GPU pod the node's GPU memory in MiB (0 when the label is
// missing or unreadable); for another pod MaxNodeScore on nodes without GPUs
// and 0 on GPU nodes.
func (p *Plugin) Score(ctx context.Context, cycle fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, status := cyclestate.Read[*state](cycle, Name)
	if status != nil {
		return 0, status
	}
	node := nodeInfo.Node()
	if !s.wantsGPU {
		if hasGPU(node, p.resource) {
			return 0, nil
		}
		return framework.MaxNodeScore, nil
	}
	value, ok := node.Labels[p.args.MemoryLabel]
	if !ok {
		return 0, nil
	}
	mib, err := memoryMiB(value)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Unreadable GPU memory label scores 0", "node", klog.KObj(node), "label", p.args.MemoryLabel, "err", err)
		return 0, nil
	}
	return mib, nil
}

// memoryMiB reads a GPU memory label: a plain integer is MiB, a quantity
// with a unit (80Gi) is converted.
func memoryMiB(value string) (int64, error) {
	if n, err := strconv.ParseInt(value, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("negative memory %d", n)
		}
		return n, nil
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return 0, err
	}
	if q.Sign() < 0 {
		return 0, fmt.Errorf("negative memory %s", value)
	}
	return q.Value() / mebibyte, nil
}

// ScoreExtensions returns the plugin itself for NormalizeScore.
func (p *Plugin) ScoreExtensions() framework.ScoreExtensions { return p }

// NormalizeScore scales so the candidate with the most GPU memory gets
// MaxNodeScore.
func (p *Plugin) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *fwk.Status {
	nodescore.ScaleToMax(scores)
	return nil
}
