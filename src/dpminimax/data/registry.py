"""The dataset registry and the top-level ``load_dataset`` (locate -> parse -> encode -> split)."""

from __future__ import annotations

import functools
from pathlib import Path

from dpminimax.data import (
    acs_employment,
    adult,
    celeba,
    cifar,
    credit_card,
    declared,
    heart,
    images,
    imbalanced,
    parkinsons,
    retired_adult,
    synthetic,
    utkface,
)
from dpminimax.data.errors import DatasetNotFoundError, UnknownDatasetError
from dpminimax.data.locate import cache_dir, obtain
from dpminimax.data.schema import DatasetSpec, ImageSplits, PreparedDataset
from dpminimax.data.standin import MISSING_DATA_MODES, STANDIN_NOTE, standin_sources
from dpminimax.data.tabular import prepare_tabular

_IMAGE_PREPROCESSING = ("canonical train/test split kept; pixels scaled to [0, 1] (float32, "
                        "n x 1 x 28 x 28); no sensitive attribute (one group 'all', s = 0); "
                        "max_rows subsamples each split")

_MNIST_CITATION = ("LeCun, Y., Bottou, L., Bengio, Y. & Haffner, P. (1998). Gradient-based "
                   "learning applied to document recognition. Proc. IEEE 86(11).")
_FASHION_CITATION = ("Xiao, H., Rasul, K. & Vollgraf, R. (2017). Fashion-MNIST: a novel image "
                     "dataset for benchmarking machine learning algorithms. arXiv:1708.07747.")

_BLOND_CROP, _BLOND_SIZE = 178, 32  # CelebA Blond_Hair: center crop, then resize (our choice)

DATASETS: dict[str, DatasetSpec] = {spec.name: spec for spec in (
    DatasetSpec(
        name="adult", kind="tabular", files=adult.FILES,
        citation="Becker, B. & Kohavi, R. (1996). Adult. UCI Machine Learning Repository. "
                 "https://doi.org/10.24432/C5XW20",
        licence="CC BY 4.0", sensitive="sex (Male=0, Female=1)",
        preprocessing="adult.data + adult.test combined; rows with '?' dropped; label income "
                      ">50K; z-score age, fnlwgt, education-num, capital-gain, capital-loss, "
                      "hours-per-week (train statistics); one-hot workclass, education, "
                      "marital-status, occupation, relationship, race, native-country; sex is "
                      "not a feature (the released code)",
        loader=adult.load_adult, sample_writer=adult.write_adult_sample,
        standin_rows=adult.TRAIN_ROWS,
    ),
    DatasetSpec(
        name="credit-card", kind="tabular", files=credit_card.FILES,
        citation="Yeh, I.-C. & Lien, C.-H. (2009). The comparisons of data mining techniques for "
                 "the predictive accuracy of probability of default of credit card clients. "
                 "Expert Systems with Applications 36(2). https://doi.org/10.24432/C55S3H",
        licence="CC BY 4.0", sensitive="SEX (1=male -> 0, 2=female -> 1)",
        preprocessing="label 'default payment next month'; EDUCATION {0,5,6}->4, MARRIAGE 0->3; "
                      "z-score LIMIT_BAL, AGE, BILL_AMT1-6, PAY_AMT1-6 (train statistics); "
                      "one-hot EDUCATION, MARRIAGE, PAY_0, PAY_2-PAY_6 at their raw levels; SEX "
                      "and ID are not features (the released code)",
        loader=credit_card.load_credit_card, sample_writer=credit_card.write_credit_sample,
        standin_rows=credit_card.ROWS,
    ),
    DatasetSpec(
        name="mnist", kind="image", files=images.MNIST_FILES,
        citation=_MNIST_CITATION,
        licence="CC BY-SA 3.0", sensitive=None, preprocessing=_IMAGE_PREPROCESSING,
        loader=images.load_mnist, sample_writer=images.write_idx_sample,
        standin_rows=images.TRAIN_IMAGES,
    ),
    DatasetSpec(
        name="fashion-mnist", kind="image", files=images.FASHION_FILES,
        citation=_FASHION_CITATION,
        licence="MIT", sensitive=None, preprocessing=_IMAGE_PREPROCESSING,
        loader=images.load_fashion_mnist, sample_writer=images.write_idx_sample,
        standin_rows=images.TRAIN_IMAGES,
    ),
    *(DatasetSpec(
        name=f"{base}-st", kind="image", files=base_spec_files,
        citation=citation + " Imbalanced binary -ST task as in Zhang et al. (2025c) and LibAUC's "
                 "ImbalancedDataGenerator.",
        licence=licence, sensitive=None, preprocessing=imbalanced.PREPROCESSING,
        loader=loader, sample_writer=images.write_idx_sample, folder=base,
        standin_rows=images.TRAIN_IMAGES,
    ) for base, base_spec_files, loader, citation, licence in (
        ("mnist", images.MNIST_FILES, imbalanced.load_mnist_st,
         _MNIST_CITATION, "CC BY-SA 3.0"),
        ("fashion-mnist", images.FASHION_FILES, imbalanced.load_fashion_mnist_st,
         _FASHION_CITATION, "MIT"),
    )),
    DatasetSpec(
        name="cifar10-st", kind="image", files=cifar.FILES,
        citation="Krizhevsky, A. (2009). Learning multiple layers of features from tiny images. "
                 "Technical report, University of Toronto. " + cifar.PAGE + " CIFAR10-ST as in "
                 "Qi, Q., Lyu, J., Bai, E.-W., Yang, T. et al. (2022). Stochastic constrained DRO "
                 "with a complexity independent of sample size. arXiv:2210.05740 (construction "
                 "from paper 004's Sec. 5.1).",
        licence="no licence stated; the authors ask users to cite the technical report",
        sensitive=None, preprocessing=cifar.PREPROCESSING,
        loader=cifar.load_cifar10_st, sample_writer=cifar.write_cifar10_sample, folder="cifar10",
    ),
    DatasetSpec(
        name="synthetic-fair", kind="tabular", files=(),
        citation="dpminimax synthetic generator (dpminimax.data.synthetic)",
        licence="MIT", sensitive="synthetic binary group",
        preprocessing=f"generated with synthetic_fair_table(n={synthetic.DEFAULT_ROWS}, "
                      f"d={synthetic.DEFAULT_FEATURES}, seed={synthetic.DEFAULT_SEED}); z-score "
                      "numeric columns (train statistics), one-hot 'segment'",
        loader=synthetic.load_synthetic_fair,
    ),
    DatasetSpec(
        name="parkinsons", kind="tabular", files=parkinsons.FILES,
        citation="Tsanas, A., Little, M. A., McSharry, P. E. & Ramig, L. O. (2010). Accurate "
                 "telemonitoring of Parkinson's disease progression by noninvasive speech tests. "
                 "IEEE Trans. Biomed. Eng. 57(4). UCI: https://doi.org/10.24432/C5ZS3N",
        licence="CC BY 4.0", sensitive="sex (0=male, 1=female)",
        preprocessing="label total_UPDRS > its median over the whole file (27.576 on the "
                      "canonical file); z-score age, test_time, motor_UPDRS and the 16 voice "
                      "measures (19 features, train statistics); subject# and sex are not "
                      "features (the released code)",
        loader=parkinsons.load_parkinsons, sample_writer=parkinsons.write_parkinsons_sample,
    ),
    DatasetSpec(
        name="heart", kind="tabular", files=heart.FILES,
        citation="Teboul, A. (2021). Heart Disease Health Indicators Dataset (Kaggle), from the "
                 "CDC Behavioral Risk Factor Surveillance System 2015. " + heart.PAGE,
        licence="CC0 1.0", sensitive="Sex (0=female, 1=male; also a feature)",
        preprocessing="label HeartDiseaseorAttack; z-score the other 21 columns, Sex included "
                      "(train statistics); 70/30 train/test (our split; the paper gives none)",
        loader=heart.load_heart, sample_writer=heart.write_heart_sample, test_fraction=0.3,
    ),
    *(DatasetSpec(
        name=name, kind="tabular", files=acs_employment.FILES,
        citation="Ding, F., Hardt, M., Miller, J. & Schmidt, L. (2021). Retiring Adult: New "
                 "datasets for fair machine learning. NeurIPS. Data: US Census Bureau, ACS PUMS "
                 "2014-2018 5-Year, Alabama persons",
        licence="US Census Bureau terms (public domain)",
        sensitive="RAC1P (codes 1..9 -> 0..8, 9 race groups)",
        preprocessing="folktables ACSEmployment: 16 features (AGEP, SCHL, MAR, RELP, DIS, ESP, "
                      "CIT, MIG, MIL, ANC, NATIVITY, DEAR, DEYE, DREM, SEX, RAC1P; missing -> -1), "
                      "label ESR == 1" + note + "; z-score all 16 with train statistics (RaCO-DP "
                      "fits its StandardScaler on all rows)",
        loader=functools.partial(acs_employment.load_acs_employment, age_range=age_range),
        sample_writer=acs_employment.write_acs_sample, folder="acs-employment",
    ) for name, age_range, note in (
        ("acs-employment", None, ", all persons (folktables' ACSEmployment has no row filter)"),
        ("acs-employment-age16-90", acs_employment.FOLKTABLES_AGE_FILTER,
         ", persons with 16 < AGEP < 90 (folktables' employment_filter age bounds)"),
    )),
    DatasetSpec(
        name="retired-adult", kind="tabular", files=retired_adult.FILES,
        citation="Ding, F., Hardt, M., Miller, J. & Schmidt, L. (2021). Retiring Adult: New "
                 "datasets for fair machine learning. NeurIPS. IPUMS Adult reconstruction (1994 "
                 "CPS ASEC), folktables repository: " + retired_adult.URL,
        licence="folktables repository (MIT); IPUMS CPS terms of use",
        sensitive="gender (Male=0, Female=1)",
        preprocessing="rows with a missing value dropped; label income > 50,000; z-score age, "
                      "education-num, capital-gain, capital-loss, hours-per-week (train "
                      "statistics); one-hot workclass, education, marital-status, occupation, "
                      "relationship, race, native-country (101 features with the UCI Adult "
                      "levels); gender is not a feature",
        loader=retired_adult.load_retired_adult, sample_writer=retired_adult.write_retired_sample,
    ),
    DatasetSpec(
        name="utkface", kind="image", files=utkface.FILES,
        citation="Zhang, Z., Song, Y. & Qi, H. (2017). Age progression/regression by conditional "
                 "adversarial autoencoder. CVPR. UTKFace aligned & cropped faces: " + utkface.PAGE,
        licence="UTKFace: non-commercial research purposes only",
        sensitive="race from the file name (0 White, 1 Black, 2 Asian, 3 Indian, 4 Others)",
        preprocessing=f"label: 9 age bins {', '.join(utkface.LABELS)} (age 0 in the first); file "
                      "names not of the form age_gender_race_date.jpg.chip.jpg dropped (counted "
                      "in meta['malformed_files']); shuffled 3:1 split; images resized to "
                      f"{utkface.IMAGE_SIZE}x{utkface.IMAGE_SIZE}, scaled to [0, 1], then "
                      "normalised per channel with the train split's mean and std (float32, n x 3 "
                      "x size x size)",
        loader=utkface.load_utkface, sample_writer=utkface.write_utkface_sample,
    ),
    *(DatasetSpec(
        name=name, kind="image-files", files=celeba.FILES,
        citation="Liu, Z., Luo, P., Wang, X. & Tang, X. (2015). Deep learning face attributes "
                 "in the wild. ICCV. " + celeba.PAGE,
        licence="CelebA agreement: non-commercial research only",
        sensitive=f"{sensitive} (attribute 0/1)",
        preprocessing=f"label {label}, sensitive {sensitive} (the released code's); official "
                      "train/test splits (valid in meta['valid']); images resized to 128x128, "
                      "float32 in [0, 1], read lazily by dpminimax.data.celeba.CelebAImages; "
                      "x holds image numbers; max_rows subsamples each split",
        loader=functools.partial(celeba.load_celeba, label=label, sensitive=sensitive),
        sample_writer=celeba.write_celeba_sample, folder="celeba",
    ) for name, label, sensitive in (("celeba", "Male", "Smiling"),
                                     ("celeba-smiling", "Smiling", "Male"))),
    DatasetSpec(
        name="celeba-blond", kind="image-files", files=celeba.FILES,
        citation="Liu, Z., Luo, P., Wang, X. & Tang, X. (2015). Deep learning face attributes "
                 "in the wild. ICCV. " + celeba.PAGE + " Task of Sagawa, S., Koh, P. W., "
                 "Hashimoto, T. B. & Liang, P. (2019). Distributionally robust neural networks "
                 "for group shifts. arXiv:1911.08731 (ICLR 2020).",
        licence="CelebA agreement: non-commercial research only",
        sensitive="Male (attribute 0/1; Sagawa et al.'s spurious attribute)",
        preprocessing=f"label Blond_Hair, sensitive Male (Sagawa et al. 2019; paper 004 "
                      "sec. 10 item 12); official train/test splits (valid in meta['valid']); "
                      f"images center-cropped to {_BLOND_CROP}x{_BLOND_CROP} then resized to "
                      f"{_BLOND_SIZE}x{_BLOND_SIZE} (our lower resolution), "
                      "float32 in [0, 1], no mean/std normalisation, read lazily by "
                      "dpminimax.data.celeba.CelebAImages; x holds image numbers; max_rows "
                      "subsamples each split",
        loader=functools.partial(celeba.load_celeba, label="Blond_Hair", sensitive="Male",
                                 size=_BLOND_SIZE, crop=_BLOND_CROP),
        sample_writer=celeba.write_celeba_sample, folder="celeba",
    ),
)}


def declared_specs() -> dict[str, DatasetSpec]:
    """The YAML-declared datasets (shipped and ``$DPMINIMAX_DATASETS``), read on each call."""
    specs = {}
    for name, decl in declared.find_declarations().items():
        if name in DATASETS:
            raise declared.DeclarationError(
                f"{decl['_path']}: {name!r} is a built-in dataset; choose another name")
        specs[name] = declared.spec_from_declaration(decl)
    return specs


def list_datasets() -> list[str]:
    """Names of the registered datasets (built-in and declared), sorted."""
    return sorted([*DATASETS, *declared_specs()])


def get_dataset_spec(name: str) -> DatasetSpec:
    """The registry entry of ``name``; :class:`UnknownDatasetError` lists the known names."""
    try:
        return DATASETS[name] if name in DATASETS else declared_specs()[name]
    except KeyError:
        raise UnknownDatasetError(
            f"unknown dataset {name!r}; known datasets: {', '.join(list_datasets())}") from None


def load_dataset(
    name: str, *, max_rows: int | None = None, split_seed: int = 100,
    test_fraction: float | None = None, missing_data: str = "fail",
) -> PreparedDataset:
    """Locate and verify the canonical files of ``name``, parse, encode and split them.

    ``missing_data="standin"``: if the files are neither on the search path nor downloadable,
    a synthetic stand-in in the canonical format is used instead (:mod:`.standin`) and the
    result's meta says so (``standin: true``); ``"fail"`` (default) raises the not-found error.

    Tabular data: rows shuffled with ``numpy.random.default_rng(split_seed)``; ``max_rows`` keeps
    the first rows of that order (before splitting); ``test_fraction`` of them form the test split;
    numeric columns are standardised with train statistics; ``test_fraction`` defaults to the
    dataset's (0.25, or 0.3 for ``heart``). Image data: the canonical split is kept
    (``test_fraction`` is ignored) and ``max_rows`` subsamples each split; CelebA yields image
    numbers, read lazily (:class:`dpminimax.data.celeba.CelebAImages`). UTK-Face has no canonical
    split: it is split like tabular data (:func:`dpminimax.data.utkface.prepare_utkface`).
    """
    if missing_data not in MISSING_DATA_MODES:
        raise ValueError(f"missing_data must be one of {MISSING_DATA_MODES}, got {missing_data!r}")
    spec = get_dataset_spec(name)
    try:
        sources, standin_reason = obtain(spec.folder or spec.name, spec.files), None
    except DatasetNotFoundError as err:
        if missing_data == "fail" or spec.sample_writer is None:
            raise
        sources = standin_sources(spec, cache_dir() / "standin" / spec.name)
        standin_reason = str(err).splitlines()[0]
    raw = spec.loader({source.filename: source.path for source in sources})
    split_fraction = spec.test_fraction if test_fraction is None else test_fraction
    if isinstance(raw, ImageSplits):
        dataset = images.prepare_images(spec, raw, sources, max_rows=max_rows,
                                        split_seed=split_seed)
    elif isinstance(raw, celeba.CelebAIndex):
        dataset = celeba.prepare_celeba(spec, raw, sources, max_rows=max_rows,
                                        split_seed=split_seed)
    elif isinstance(raw, utkface.UTKFaceIndex):
        dataset = utkface.prepare_utkface(spec, raw, sources, max_rows=max_rows,
                                          split_seed=split_seed, test_fraction=split_fraction)
    else:
        dataset = prepare_tabular(spec, raw, sources, max_rows=max_rows, split_seed=split_seed,
                                  test_fraction=split_fraction)
    if standin_reason is not None:
        dataset.meta.update(standin=True, standin_note=STANDIN_NOTE,
                            standin_reason=standin_reason)
    return dataset


def write_canonical_sample(name: str, directory: str | Path, n_rows: int = 50,
                           seed: int = 0) -> list[Path]:
    """Write small random files of dataset ``name`` in its exact canonical on-disk format."""
    spec = get_dataset_spec(name)
    if spec.sample_writer is None:
        raise ValueError(f"dataset {name!r} has no canonical files to write")
    return spec.sample_writer(Path(directory), n_rows, seed)
