// Package zone is the AZScheduler plugin: it spreads the pods of one owner
// (the controller in their ownerReferences) across zones.
package zone

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"interference.orchestrator/scheduler-plugins/pkg/cyclestate"
	"interference.orchestrator/scheduler-plugins/pkg/deletions"
	"interference.orchestrator/scheduler-plugins/pkg/nodescore"
	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
)

// Name is the plugin name used in the KubeSchedulerConfiguration.
const Name = "AZScheduler"

// Args configure AZScheduler.
type Args struct {
	// TopologyKey is the node label whose values are the zones.
	TopologyKey string `json:"topologyKey,omitempty"`
}

// DefaultArgs are the args when the KubeSchedulerConfiguration gives none.
func DefaultArgs() Args {
	return Args{TopologyKey: v1.LabelTopologyZone}
}

// Validate names the first bad arg.
func (a Args) Validate() error {
	return pluginargs.QualifiedName(Name, "topologyKey", a.TopologyKey, "label key")
}

// Plugin is AZScheduler.
type Plugin struct {
	args   Args
	handle framework.Handle
	// nodes maps a node name to its *nodeOwners; PreScore replaces an entry
	// when its node changed.
	nodes sync.Map
}

var (
	_ framework.PreScorePlugin = &Plugin{}
	_ framework.ScorePlugin    = &Plugin{}
)

// New builds the plugin from its args (defaults for missing fields).
func New(_ context.Context, obj runtime.Object, handle framework.Handle) (framework.Plugin, error) {
	args, err := pluginargs.Load(Name, obj, DefaultArgs())
	if err != nil {
		return nil, err
	}
	p := &Plugin{args: args, handle: handle}
	// A deleted node's counts leave with it.
	if err := deletions.Nodes(Name, handle, func(node *v1.Node) { p.nodes.Delete(node.Name) }); err != nil {
		return nil, err
	}
	return p, nil
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }

// state holds the owner's pod count per zone and the largest count, which a
// node without a zone label gets: it cannot help the spread.
type state struct {
	counts  map[string]int64
	highest int64
}

func (s *state) Clone() fwk.StateData { return s }

// ownerKey identifies a pod's controller: the pods of one owner are spread.
type ownerKey struct{ namespace, kind, name string }

// owner identifies the pod's controller; ok is false for a bare pod.
func owner(pod *v1.Pod) (ownerKey, bool) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return ownerKey{}, false
	}
	return ownerKey{pod.Namespace, ref.Kind, ref.Name}, true
}

// nodeOwners counts the pods per owner on one node (assumed pods included,
// pods being deleted left out), valid for one NodeInfo generation: the
// framework gives every change of a NodeInfo a new, never reused generation
// and its snapshots keep it, so a node is counted again once per change,
// not once per pod scheduled.
type nodeOwners struct {
	generation int64
	counts     map[ownerKey]int64
	// uids are the counted pods, so that PreScore can leave out the pod
	// being scheduled when it is already in the NodeInfo.
	uids map[types.UID]struct{}
}

// ownersOf returns the node's owner counts for this NodeInfo's generation.
func (p *Plugin) ownersOf(nodeInfo fwk.NodeInfo, name string) *nodeOwners {
	generation := nodeInfo.GetGeneration()
	if cached, ok := p.nodes.Load(name); ok {
		if owners := cached.(*nodeOwners); owners.generation == generation {
			return owners
		}
	}
	owners := &nodeOwners{generation: generation}
	for _, info := range nodeInfo.GetPods() {
		other := info.GetPod()
		if other.DeletionTimestamp != nil {
			continue
		}
		key, ok := owner(other)
		if !ok {
			continue
		}
		if owners.counts == nil {
			owners.counts = map[ownerKey]int64{}
			owners.uids = map[types.UID]struct{}{}
		}
		owners.counts[key]++
		owners.uids[other.UID] = struct{}{}
	}
	p.nodes.Store(name, owners)
	return owners
}

// PreScore counts the owner's pods per zone over every node of the snapshot
// (assumed pods included), from each node's owner counts. Bare pods skip
// Score.
func (p *Plugin) PreScore(_ context.Context, cycle fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	key, ok := owner(pod)
	if !ok {
		return fwk.NewStatus(fwk.Skip)
	}
	nodes, err := p.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("%s: listing nodes: %w", Name, err))
	}
	s := &state{counts: map[string]int64{}}
	for _, nodeInfo := range nodes {
		node := nodeInfo.Node()
		zone, labelled := p.zoneOf(node)
		if !labelled {
			continue
		}
		owners := p.ownersOf(nodeInfo, node.Name)
		count := owners.counts[key]
		if count > 0 {
			if _, self := owners.uids[pod.UID]; self {
				count--
			}
		}
		count += s.counts[zone]
		s.counts[zone] = count
		if count > s.highest {
			s.highest = count
		}
	}
	cyclestate.Write(cycle, Name, s)
	return nil
}

// Score returns the owner's pod count in the node's zone (a cost);
// NormalizeScore turns the emptiest zone into MaxNodeScore.
func (p *Plugin) Score(_ context.Context, cycle fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, status := cyclestate.Read[*state](cycle, Name)
	if status != nil {
		return 0, status
	}
	zone, labelled := p.zoneOf(nodeInfo.Node())
	if !labelled {
		return s.highest, nil
	}
	return s.counts[zone], nil
}

// zoneOf reads the node's zone label; labelled is false for a node without
// one (or no node).
func (p *Plugin) zoneOf(node *v1.Node) (zone string, labelled bool) {
	if node == nil {
		return "", false
	}
	zone, labelled = node.Labels[p.args.TopologyKey]
	return zone, labelled
}

// ScoreExtensions returns the plugin itself for NormalizeScore.
func (p *Plugin) ScoreExtensions() framework.ScoreExtensions { return p }

// NormalizeScore maps the zone with the fewest of the owner's pods to
// MaxNodeScore and the fullest to 0.
func (p *Plugin) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *fwk.Status {
	nodescore.InvertMinMax(scores)
	return nil
}
