-- A b4 change-id ties the versions of one sender only: another sender's
-- posting with someone's change-id could supersede (and cancel) their
-- series. Keys written from now on are change-id:<sender>:<id>; the keys
-- already stored get their author the same way, so a next version posted
-- after the upgrade still follows the one before it.
UPDATE list_series
   SET series_key = 'change-id:' || lower(author) || ':' || substr(series_key, 11)
 WHERE series_key LIKE 'change-id:%'
   AND series_key NOT LIKE 'change-id:%:%';
