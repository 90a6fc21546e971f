package dev.postbox.spi.testing;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.ArchConfiguration;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;

/**
 * The layer rule every adapter keeps: of Postbox, it depends on the SPI only (never on the runtime,
 * another adapter, or the SPI's test kit). Each adapter calls {@link #check} from a one-line test;
 * its module needs {@code com.tngtech.archunit:archunit} in test scope.
 */
public final class AdapterArchitecture {

  private AdapterArchitecture() {}

  /**
   * Fails with ArchUnit's report when a production class of the package depends on anything of
   * Postbox's outside {@code dev.postbox.spi} and the package itself.
   *
   * @param adapterPackage e.g. {@code dev.postbox.broker.kafka}
   */
  public static void check(String adapterPackage) {
    // Only the adapter's own classes are read; what they use is judged by its name.
    ArchConfiguration.get().setResolveMissingDependenciesFromClassPath(false);
    JavaClasses classes =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
            .importPackages(adapterPackage);
    if (classes.isEmpty()) {
      throw new AssertionError("no production classes found in " + adapterPackage);
    }
    rule(adapterPackage).check(classes);
  }

  /** The rule itself, for classes imported by the caller. */
  public static ArchRule rule(String adapterPackage) {
    return noClasses()
        .that()
        .resideInAPackage(adapterPackage + "..")
        .should()
        .dependOnClassesThat(
            resideInAPackage("dev.postbox..")
                .and(not(resideInAnyPackage("dev.postbox.spi", adapterPackage + ".."))))
        .because("an adapter depends on the SPI only");
  }
}
