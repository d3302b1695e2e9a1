// Package decisiontable holds no scheduler code: its tests run the four
// plugins together, as the scheduler_plugins role's profile enables them,
// over tests/fixtures/scheduling_cases.json (the decisions the Python
// extender must make too) and over a cluster of a realistic size for the
// benchmarks.
package decisiontable
