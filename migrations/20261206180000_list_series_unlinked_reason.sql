-- A series not answered for want of a --public-url said "the server has no
-- --public-url", which stops being true once an operator sets one; the
-- reason is now written as what happened when it was measured.
UPDATE list_series
SET reason = 'not answered: it was measured while the server had no --public-url to link to'
WHERE reason = 'not answered: the server has no --public-url to link to';
