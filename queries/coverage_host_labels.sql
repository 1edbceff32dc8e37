-- Host labels seen in the gateway logs and how far they resolve to participant
-- addresses (see log_host_labels): one row per label.
-- Reads: log_host_labels.
SELECT label, status, address, candidates, resolved_from, lines
FROM log_host_labels
ORDER BY status DESC, label;
