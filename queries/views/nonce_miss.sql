-- The miss rule, ONE DEFINITION: what the gateway's classification of a nonce makes of it.
-- nonce_miss(disposition, timeout_outcome, outcome_may_be_unlogged): a miss is a nonce its host
--   left unfinished, refused before its receipt (disposition unfinished_refused:
--   'refused_before_receipt') or failed after it (unfinished_execution: 'failed_after_receipt'),
--   whose timeout was applied (the chain counts it in missed_requests); an unfinished nonce whose
--   timeout was not applied is 'not_applied' (no miss); any other disposition NULL (no miss).
--   A timeout outcome not given (NULL or '') counts as applied where the evidence may leave it
--   out (outcome_may_be_unlogged: a nonce_disposition log line) and not where it is recorded when
--   the timeout is evaluated (false: the accounting API's counters, where none means pending).
-- unclassified_miss(finished, has_receipt, have_dispositions): an attempt whose nonce has no
--   disposition: finished is no miss; without any nonce_disposition line in the logs an
--   unfinished one is estimated by its receipt ('failed_after_receipt_est',
--   'refused_before_receipt_est'); with them, 'left_unfinished' (no miss: not classified yet).
-- is_miss(kind): whether a kind above is a miss (the two kinds, estimated or not).
-- The accounting API's own count of misses (protocol_misses: the ledger's HostStats.Missed,
-- queries/poc_overload_gateway_misses.sql) is the ledger's, not a classification of nonces.
CREATE OR REPLACE MACRO nonce_miss(disposition, timeout_outcome, outcome_may_be_unlogged) AS
    CASE WHEN disposition IN ('unfinished_refused', 'unfinished_execution') THEN
        CASE WHEN timeout_outcome = 'applied'
                  OR (outcome_may_be_unlogged AND coalesce(timeout_outcome, '') = '')
             THEN CASE disposition WHEN 'unfinished_refused' THEN 'refused_before_receipt'
                                   ELSE 'failed_after_receipt' END
             ELSE 'not_applied' END
    END;
CREATE OR REPLACE MACRO unclassified_miss(finished, has_receipt, have_dispositions) AS
    CASE WHEN finished THEN NULL
         WHEN NOT have_dispositions THEN
             CASE WHEN has_receipt THEN 'failed_after_receipt_est' ELSE 'refused_before_receipt_est' END
         ELSE 'left_unfinished' END;
CREATE OR REPLACE MACRO is_miss(kind) AS
    coalesce(kind IN ('refused_before_receipt', 'failed_after_receipt',
                      'refused_before_receipt_est', 'failed_after_receipt_est'), false);
