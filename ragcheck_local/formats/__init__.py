"""File formats: the input records (:mod:`.input`), the output file (:mod:`.output`), the
run checkpoint (:mod:`.checkpoint`), and how files are written (:mod:`.files`)."""
