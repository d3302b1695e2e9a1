// Package interference is the InterferenceAware score plugin: it prefers the
// node where the pod adds the least interference to the pods already there,
// the same dot-product formula as the Python placement engine; when pods
// declare a CPU demand, the rise of the time-shared score of the engine's
// timesharing.py instead (timesharing.go).
package interference

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"interference.orchestrator/scheduler-plugins/pkg/cyclestate"
	"interference.orchestrator/scheduler-plugins/pkg/deletions"
	"interference.orchestrator/scheduler-plugins/pkg/nodescore"
	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
)

// Name is the plugin name used in the KubeSchedulerConfiguration.
const Name = "InterferenceAware"

// Args configure InterferenceAware.
type Args struct {
	// ProfileAnnotation holds the pod's pressure profile as JSON.
	ProfileAnnotation string `json:"profileAnnotation,omitempty"`
	// TypeLabel is read when the annotation is absent: cpu or memory.
	TypeLabel string `json:"typeLabel,omitempty"`
	// Resolution is how many raw score units one unit of interference is
	// worth before NormalizeScore; it bounds the precision of the ranking.
	Resolution int64 `json:"resolution,omitempty"`
	// Sharing says what nodes of one group (one host) share: nil, or every
	// share 0, leaves the score to the pods on the node itself.
	Sharing *SharingArgs `json:"sharing,omitempty"`
}

// SharingArgs is the placement engine's `sharing` option: nodes with one
// value of the node label Label form a group (one host), and Pressures gives
// per resource (of Dimensions) the share, 0 to 1, of the same-node
// interference that two pods on different nodes of a group still cause.
type SharingArgs struct {
	// Label is the node label whose value names a node's group.
	Label string `json:"label"`
	// Pressures maps a resource to its share across nodes; absent is 0.
	Pressures map[string]float64 `json:"pressures,omitempty"`
}

// shareEpsilon is the engine's EPSILON (plugins/module_utils/interference.py):
// a share at or below it crosses nothing, as in sharing.py's Sharing.active.
const shareEpsilon = 1e-9

// Shares returns the share of each resource in Dimensions order, 0 for a
// resource Pressures leaves out (a nil receiver: all 0).
func (s *SharingArgs) Shares() Profile {
	var shares Profile
	if s == nil {
		return shares
	}
	for key, share := range s.Pressures {
		if index := dimensionIndex(key); index >= 0 && share > shareEpsilon {
			shares[index] = share
		}
	}
	return shares
}

// validate names the first bad field of args.sharing.
func (s *SharingArgs) validate() error {
	if err := pluginargs.QualifiedName(Name, "sharing.label", s.Label, "label key"); err != nil {
		return err
	}
	keys := make([]string, 0, len(s.Pressures))
	for key := range s.Pressures {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if dimensionIndex(key) < 0 {
			return fmt.Errorf("%s: args.sharing.pressures: unknown resource %q: expected one of %s",
				Name, key, strings.Join(Dimensions[:], ", "))
		}
		if share := s.Pressures[key]; math.IsNaN(share) || share < 0 || share > 1 {
			return fmt.Errorf("%s: args.sharing.pressures.%s: must be a number from 0 (nothing crosses nodes) to 1 (as on one node), got %v",
				Name, key, share)
		}
	}
	return nil
}

// DefaultArgs are the args when the KubeSchedulerConfiguration gives none.
func DefaultArgs() Args {
	return Args{
		ProfileAnnotation: "interference.orchestrator/profile",
		TypeLabel:         "interference.orchestrator/type",
		Resolution:        1000,
	}
}

// Validate names the first bad arg.
func (a Args) Validate() error {
	for field, key := range map[string]string{"profileAnnotation": a.ProfileAnnotation, "typeLabel": a.TypeLabel} {
		if err := pluginargs.QualifiedName(Name, field, key, "key"); err != nil {
			return err
		}
	}
	if a.Resolution < 1 || a.Resolution > 1_000_000 {
		return fmt.Errorf("%s: args.resolution: must be from 1 to 1000000, got %d", Name, a.Resolution)
	}
	if a.Sharing != nil {
		return a.Sharing.validate()
	}
	return nil
}

// Plugin scores nodes by the interference a pod would add there.
type Plugin struct {
	args  Args
	pods  *podProfiles
	nodes *nodeCache
	// shares are args.sharing's shares (Dimensions order) when some share is
	// above 0; sharing is false otherwise, and no cross-node term is computed.
	shares  Profile
	sharing bool
	// allNodes lists every node of the scheduler's snapshot, for the sums of
	// a group (the nodes that passed Filter may leave some of its nodes out).
	// New sets it from the handle; tests set it themselves. nil: PreScore
	// uses the nodes it receives.
	allNodes func() ([]fwk.NodeInfo, error)
}

var (
	_ framework.PreScorePlugin = &Plugin{}
	_ framework.ScorePlugin    = &Plugin{}
)

// New builds the plugin from its args (defaults for missing fields). With a
// handle (in the scheduler), deleted pods and nodes leave the plugin's memos
// through the scheduler's own informers.
func New(_ context.Context, obj runtime.Object, handle framework.Handle) (framework.Plugin, error) {
	args, err := pluginargs.Load(Name, obj, DefaultArgs())
	if err != nil {
		return nil, err
	}
	p := &Plugin{args: args, pods: newPodProfiles(), nodes: &nodeCache{}}
	p.shares = args.Sharing.Shares()
	p.sharing = p.shares != (Profile{})
	if handle != nil {
		p.allNodes = func() ([]fwk.NodeInfo, error) {
			lister := handle.SnapshotSharedLister()
			if lister == nil {
				return nil, nil
			}
			return lister.NodeInfos().List()
		}
	}
	if err := deletions.Pods(Name, handle, func(pod *v1.Pod) { p.pods.forget(pod.UID) }); err != nil {
		return nil, err
	}
	if err := deletions.Nodes(Name, handle, func(node *v1.Node) { p.nodes.forget(node.Name) }); err != nil {
		return nil, err
	}
	return p, nil
}

// Name returns the plugin name.
func (p *Plugin) Name() string { return Name }

// state is what PreScore works out for Score: the pod's profile and CPU
// demand; with sharing, the profile weighted by the shares and the sum of
// the node sums per group (value of the sharing label). With CPU
// time-sharing (timeSharing), the sums of NodeLoad.Weighted and
// NodeLoad.Exposure per group instead (loads, with sharing).
type state struct {
	profile     Profile
	demand      int64
	weighted    Profile
	groups      map[string]Profile
	timeSharing bool
	loads       map[string]GroupLoad
}

func (s *state) Clone() fwk.StateData { return s }

// PreScore reads the pod's profile and CPU demand once per cycle. A pod
// without a profile, or with a malformed one, skips Score: every node is
// equal to this plugin; so does a pod that presses on nothing and demands no
// CPU (it adds nothing anywhere). With sharing it also adds up the node sums
// of every group over all the nodes of the snapshot (each node's sum cached
// per generation).
//
// CPU time-sharing scores the pod when it declares a CPU demand or some
// node PreScore looks at holds a pod that does: the snapshot's nodes when it
// lists them (sharing), else the nodes it receives (without a group term, a
// node's score depends on its own pods only, and where none of them demands
// CPU the time-shared score is exactly twice the pair score: the same
// ranking). Otherwise the score is the pair score of before.
func (p *Plugin) PreScore(ctx context.Context, cycle fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	logger := klog.FromContext(ctx)
	entry := p.podOf(logger, pod)
	profile, demand := entry.profile, entry.demand
	if !entry.usable || (profile == (Profile{}) && demand == 0) {
		return fwk.NewStatus(fwk.Skip)
	}
	s := &state{profile: profile, demand: demand}
	if p.sharing {
		for i := range s.weighted {
			s.weighted[i] = p.shares[i] * profile[i]
		}
	}
	// The group's other nodes change the score when the pod presses on a
	// shared resource, or (time-sharing) when its demand changes how much of
	// the time the node's pods run.
	listAll := p.sharing && (s.weighted != (Profile{}) || demand > 0)
	if listAll {
		all, err := p.listNodes(nodes)
		if err != nil {
			return fwk.AsStatus(err)
		}
		nodes = all
	}
	s.timeSharing = demand > 0
	for i := 0; i < len(nodes) && !s.timeSharing; i++ {
		if nodes[i].Node() != nil && p.sumsOf(logger, nodes[i]).demand > 0 {
			s.timeSharing = true
		}
	}
	switch {
	case listAll && s.timeSharing:
		s.loads = p.groupLoads(logger, pod, nodes)
	case listAll:
		s.groups = p.groupSums(logger, pod, nodes)
	}
	cyclestate.Write(cycle, Name, s)
	return nil
}

// listNodes returns every node of the snapshot (the nodes PreScore received
// when there is no snapshot to list).
func (p *Plugin) listNodes(nodes []fwk.NodeInfo) ([]fwk.NodeInfo, error) {
	if p.allNodes != nil {
		all, err := p.allNodes()
		if err != nil {
			return nil, fmt.Errorf("%s: listing nodes: %w", Name, err)
		}
		if all != nil {
			return all, nil
		}
	}
	return nodes, nil
}

// grouped calls add for each node with the sharing label, with the label's
// value (its group); a node without the label is in no group.
func (p *Plugin) grouped(nodes []fwk.NodeInfo, add func(group string, nodeInfo fwk.NodeInfo)) {
	label := p.args.Sharing.Label
	for _, nodeInfo := range nodes {
		if node := nodeInfo.Node(); node != nil {
			if value, labelled := node.Labels[label]; labelled {
				add(value, nodeInfo)
			}
		}
	}
}

// groupSums adds up the node sums per value of the sharing label over the
// nodes. The pod being scheduled, if some NodeInfo holds it already, is
// left out.
func (p *Plugin) groupSums(logger klog.Logger, pod *v1.Pod, nodes []fwk.NodeInfo) map[string]Profile {
	groups := map[string]Profile{}
	p.grouped(nodes, func(value string, nodeInfo fwk.NodeInfo) {
		sums := p.sumsOf(logger, nodeInfo)
		group := groups[value]
		for i := range group {
			group[i] += sums.sum[i]
		}
		if own, onNode := sums.members[pod.UID]; onNode {
			for i := range group {
				group[i] -= own.Profile[i]
			}
		}
		groups[value] = group
	})
	return groups
}

// groupLoads adds up NodeLoad.Weighted and NodeLoad.Exposure per value of
// the sharing label over the nodes (the extender's added_time_shared), each
// node without the pod being scheduled if it holds it already.
func (p *Plugin) groupLoads(logger klog.Logger, pod *v1.Pod, nodes []fwk.NodeInfo) map[string]GroupLoad {
	groups := map[string]GroupLoad{}
	p.grouped(nodes, func(value string, nodeInfo fwk.NodeInfo) {
		group := groups[value]
		if sums := p.sumsOf(logger, nodeInfo); len(sums.members) > 0 {
			load := p.withoutPod(sums, nodeInfo, pod)
			weighted, exposure := load.Weighted(), load.Exposure()
			for i := range group.Weighted {
				group.Weighted[i] += weighted[i]
				group.Exposure[i] += exposure[i]
			}
		}
		groups[value] = group
	})
	return groups
}

// withoutPod is the node's time-sharing load without the pod being
// scheduled, when the NodeInfo holds it already.
func (p *Plugin) withoutPod(sums *nodeSums, nodeInfo fwk.NodeInfo, pod *v1.Pod) *NodeLoad {
	load := p.loadOf(sums, nodeInfo)
	if own, onNode := sums.members[pod.UID]; onNode {
		load = load.clone()
		load.Add(own, -1)
	}
	return load
}

// maxTimeShared bounds the raw time-shared score (a demand of a million
// cores on a node of one millicore slows its pods a billion times), so that
// NormalizeScore's arithmetic cannot overflow.
const maxTimeShared = 1 << 50

// Score returns the added interference in raw units (Resolution per unit);
// NormalizeScore turns lower interference into a higher score. The added
// interference is the dot product of the pod's profile with the sum of the
// profiles on the node (dot is linear), the sum kept per node generation;
// with sharing, plus the dot product of the share-weighted profile with the
// sum over the group's other nodes (the group's sum less the node's own).
// With CPU time-sharing it is the rise of the time-shared score instead
// (AddedTimeShared), in the same units.
func (p *Plugin) Score(ctx context.Context, cycle fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, status := cyclestate.Read[*state](cycle, Name)
	if status != nil {
		return 0, status
	}
	if s.timeSharing {
		return p.scoreTimeShared(ctx, s, pod, nodeInfo), nil
	}
	profile := s.profile
	// NodeInfo includes pods the scheduler has assumed but not yet bound, so
	// a burst sees the pods placed just before it.
	sums := p.sumsOf(klog.FromContext(ctx), nodeInfo)
	added := Dot(profile, sums.sum)
	var own Profile // the pod itself, when the NodeInfo holds it already
	if len(sums.members) > 0 {
		if own = sums.members[pod.UID].Profile; own != (Profile{}) {
			added -= Dot(profile, own)
		}
	}
	if s.groups != nil {
		// A node without the label is in no group ("" is a value like any).
		if value, labelled := nodeInfo.Node().Labels[p.args.Sharing.Label]; labelled {
			// The group's other nodes: the group's sum (which leaves the pod
			// out) less the node's own sum (which may hold it: own). A group
			// PreScore did not see (a node missing from the snapshot's list)
			// adds nothing.
			if group, listed := s.groups[value]; listed {
				for i, weighted := range s.weighted {
					added += weighted * (group[i] - sums.sum[i] + own[i])
				}
			}
		}
	}
	return int64(math.Round(added * float64(p.args.Resolution))), nil
}

// scoreTimeShared is the rise of the time-shared score when the pod joins
// the node, in raw units: the node's load (without the pod, if the NodeInfo
// holds it already) and, with sharing, its group's loads less its own.
func (p *Plugin) scoreTimeShared(ctx context.Context, s *state, pod *v1.Pod, nodeInfo fwk.NodeInfo) int64 {
	sums := p.sumsOf(klog.FromContext(ctx), nodeInfo)
	load := p.withoutPod(sums, nodeInfo, pod)
	var others *GroupLoad
	if s.loads != nil {
		// As for the pair score: a node without the label is in no group, and
		// a group PreScore did not see adds nothing.
		if value, labelled := nodeInfo.Node().Labels[p.args.Sharing.Label]; labelled {
			if group, listed := s.loads[value]; listed {
				weighted, exposure := load.Weighted(), load.Exposure()
				for i := range group.Weighted {
					group.Weighted[i] -= weighted[i]
					group.Exposure[i] -= exposure[i]
				}
				others = &group
			}
		}
	}
	added := AddedTimeShared(Kind{Profile: s.profile, Demand: s.demand}, load, p.shares, others)
	return int64(max(-maxTimeShared, min(maxTimeShared, math.Round(added*float64(p.args.Resolution)))))
}

// ScoreExtensions returns the plugin itself for NormalizeScore.
func (p *Plugin) ScoreExtensions() framework.ScoreExtensions { return p }

// NormalizeScore maps the least added interference to MaxNodeScore and the
// most to 0.
func (p *Plugin) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *fwk.Status {
	nodescore.InvertMinMax(scores)
	return nil
}
