/**
 * Named points on the paths that matter to the guarantees (after a commit, before an ack), at which
 * test code's {@link dev.postbox.runtime.checkpoint.CheckpointListener}s may kill the process or
 * pause it. The runtime registers no listener of its own; without one, a point costs a read.
 */
package dev.postbox.runtime.checkpoint;
