-- A tracked tree that names no workloads measures each new head on the
-- workloads the workload map gives the files its commits touch; a head
-- whose commits touch only files no workload exercises is not measured,
-- and the tree says why until a later head is (issue 39).
ALTER TABLE trees ADD COLUMN push_note text;
