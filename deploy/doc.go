// Package deploy holds chatd's deployment artefacts (docker/, compose/,
// helm/, systemd/, prometheus/, grafana/) and, in its tests, the checks
// that keep them true to the code: every flag and CHATD_* variable they set
// is one `chatd --help` lists, every file they copy or mount exists, the
// compose topology is a real cluster, and every metric a dashboard panel or
// an alert reads is one a running node exports. docs/operations.md says how
// to deploy with each; `make check-deploy` adds helm, promtool and
// systemd-analyze. The package has no code of its own.
package deploy
