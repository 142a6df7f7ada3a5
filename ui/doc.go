// Package ui is the dashboard every node serves on its API address (the
// plain-HTTP side, cluster/web.go): one page of plain HTML, CSS and
// JavaScript, embedded in the binary, with no framework, no build step and
// nothing fetched from elsewhere, so that it works on a machine with no
// network. The page reads /hpc/dashboard/state and the server-sent events
// of /hpc/dashboard/events, which cluster/dashboard.go serves.
//
// It imports nothing of the project.
package ui
