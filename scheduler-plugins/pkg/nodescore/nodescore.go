// Package nodescore maps a plugin's raw per-node numbers onto the framework's
// 0..MaxNodeScore range in NormalizeScore.
package nodescore

import (
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// ScaleToMax maps raw scores in [0, max] linearly onto [0, MaxNodeScore]: the
// node with the largest raw value gets MaxNodeScore. All zero stays all zero.
func ScaleToMax(scores framework.NodeScoreList) {
	var highest int64
	for _, s := range scores {
		if s.Score > highest {
			highest = s.Score
		}
	}
	if highest == 0 {
		return
	}
	for i := range scores {
		scores[i].Score = scores[i].Score * framework.MaxNodeScore / highest
	}
}

// InvertMinMax maps raw costs onto [0, MaxNodeScore] so that the lowest cost
// gets MaxNodeScore and the highest gets 0. Equal costs all get MaxNodeScore:
// the plugin then does not tell the nodes apart.
func InvertMinMax(scores framework.NodeScoreList) {
	if len(scores) == 0 {
		return
	}
	lowest, highest := scores[0].Score, scores[0].Score
	for _, s := range scores {
		if s.Score < lowest {
			lowest = s.Score
		}
		if s.Score > highest {
			highest = s.Score
		}
	}
	for i := range scores {
		if highest == lowest {
			scores[i].Score = framework.MaxNodeScore
			continue
		}
		scores[i].Score = (highest - scores[i].Score) * framework.MaxNodeScore / (highest - lowest)
	}
}
