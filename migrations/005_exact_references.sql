-- externalReference lookups are exact: no case, accent or trailing-space
-- folding.
ALTER TABLE entries MODIFY external_reference VARCHAR(255)
  CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL;
