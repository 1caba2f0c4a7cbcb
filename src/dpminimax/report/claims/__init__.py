"""The paper-says / we-measure claims tables: the claims file, its measures, the interval verdicts
and the trivial baselines they are judged against."""
