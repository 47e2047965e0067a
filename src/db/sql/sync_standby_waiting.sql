-- This login's sessions whose commit waits for a synchronous standby to confirm it
-- (flushed, or applied under synchronous_commit = remote_apply). Other logins' wait
-- events are hidden from a login without pg_read_all_stats, and are not needed: the
-- daemon asks about its own commits.
SELECT count(*)
  FROM pg_stat_activity
 WHERE usename = current_user
   AND wait_event_type = 'IPC'
   AND wait_event = 'SyncRep';
