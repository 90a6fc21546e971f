package dev.postbox.runtime;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.ArchConfiguration;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import dev.postbox.runtime.checkpoint.Checkpoints;
import org.junit.jupiter.api.Test;

/** The runtime's layers, held by ArchUnit over its production classes. */
class ArchitectureTest {

  private static final JavaClasses RUNTIME = importRuntime();

  private static JavaClasses importRuntime() {
    // Only the runtime's own classes are read; what they use is judged by its name.
    ArchConfiguration.get().setResolveMissingDependenciesFromClassPath(false);
    return new ClassFileImporter()
        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
        .importPackages("dev.postbox.runtime");
  }

  /** Every package but the Jakarta wiring: plain Java, tested without a container. */
  private static final String[] ENGINE = {
    "dev.postbox.runtime",
    "dev.postbox.runtime.checkpoint..",
    "dev.postbox.runtime.common..",
    "dev.postbox.runtime.config..",
    "dev.postbox.runtime.db..",
    "dev.postbox.runtime.dedup..",
    "dev.postbox.runtime.idempotency..",
    "dev.postbox.runtime.inbox..",
    "dev.postbox.runtime.outbox..",
    "dev.postbox.runtime.relay..",
    "dev.postbox.runtime.retention.."
  };

  @Test
  void theEngineImportsNoContainerApi() {
    assertThat(RUNTIME.size()).isGreaterThan(40);
    noClasses()
        .that()
        .resideInAnyPackage(ENGINE)
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "jakarta..", "org.eclipse.microprofile..", "dev.postbox.runtime.jakarta..")
        .because("the engine is plain Java; the Jakarta wiring is a thin layer on top of it")
        .check(RUNTIME);
  }

  @Test
  void theApiStandsOnTheSpiAndJavaAlone() {
    com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes()
        .that()
        .resideInAPackage("dev.postbox.runtime.api..")
        .should()
        .onlyDependOnClassesThat()
        .resideInAnyPackage(
            "dev.postbox.runtime.api..",
            "dev.postbox.spi..",
            "java..",
            // the handler's JSON decoding, and the binding annotation of @Idempotent
            "jakarta.json.bind..",
            "jakarta.interceptor..",
            "jakarta.ws.rs..")
        .because(
            "the public API is what an application compiles against: it must not drag in the"
                + " engine, the Jakarta wiring or a container API beyond the annotations it carries")
        .check(RUNTIME);
  }

  @Test
  void theRuntimeKnowsBrokersThroughTheSpiOnly() {
    noClasses()
        .should()
        .dependOnClassesThat()
        .resideInAPackage("dev.postbox.broker..")
        .because("the adapter is chosen at deployment")
        .check(RUNTIME);
  }

  @Test
  void noClassButTheDialectBranchesOnTheDatabase() {
    // A switch over the dialect compiles to reads of its constants (in a synthetic class of the
    // class that switches), so this also catches the switches.
    String dialect = dev.postbox.runtime.db.Dialect.class.getName();
    noClasses()
        .that()
        .doNotHaveFullyQualifiedName(dialect)
        .and()
        .haveNameNotMatching(java.util.regex.Pattern.quote(dialect) + "\\$.*")
        .should()
        .accessField(dev.postbox.runtime.db.Dialect.class, "POSTGRESQL")
        .orShould()
        .accessField(dev.postbox.runtime.db.Dialect.class, "MARIADB")
        .orShould()
        .accessField(dev.postbox.runtime.db.Dialect.class, "H2")
        .because("every statement that differs between databases is a named member of the dialect")
        .check(RUNTIME);
  }

  @Test
  void productionCodeHoldsNoTestInstrument() {
    noClasses()
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "org.junit..", "org.assertj..", "org.awaitility..", "dev.postbox.spi.testing..")
        .orShould()
        .implement(dev.postbox.runtime.checkpoint.CheckpointListener.class)
        .orShould()
        .implement(dev.postbox.spi.BrokerProvider.class)
        .because(
            "crash points and negative controls (broker wrappers that break the promise) live in"
                + " test code")
        .check(RUNTIME);
    assertThat(Checkpoints.listeners())
        .as("the runtime jar registers no CheckpointListener of its own")
        .isEmpty();
  }

  /** The inbox's flows: they take a delivery or a letter from start to end, using the parts. */
  private static final String[] INBOX_FLOWS = {
    "InboxEngine",
    "InboxProcessor",
    "DeferredInbox",
    "DeadLetters",
    "ConsumerLoop",
    "RunningSubscription"
  };

  /** The parts a flow uses for one step each. */
  private static final String[] INBOX_PARTS = {
    "Recording", "FailurePath", "Classifier", "Stalls", "BatchFallbacks"
  };

  /** The leaves every part may use: the handler call and its failures, the tracked delivery. */
  private static final String[] INBOX_LEAVES = {
    "HandlerCall",
    "Tracked",
    "Poison",
    "Item",
    "Failures",
    "HeldKeys",
    "LetterDraft",
    "InboxUnavailableException"
  };

  private static com.tngtech.archunit.base.DescribedPredicate<
          com.tngtech.archunit.core.domain.JavaClass>
      inbox(String... simpleNames) {
    java.util.Set<String> names = new java.util.HashSet<>();
    for (String n : simpleNames) {
      names.add("dev.postbox.runtime.inbox." + n);
    }
    return com.tngtech.archunit.base.DescribedPredicate.describe(
        "inbox classes " + java.util.Arrays.toString(simpleNames),
        c -> names.contains(c.getName().replaceFirst("\\$.*", "")));
  }

  @Test
  void noArrowInsideTheInboxRunsUp() {
    noClasses()
        .that(inbox(INBOX_PARTS))
        .should()
        .dependOnClassesThat(inbox(INBOX_FLOWS))
        .because("a part does one step for the flows that use it, and never calls back into them")
        .check(RUNTIME);
    for (String part : INBOX_PARTS) {
      String[] others =
          java.util.Arrays.stream(INBOX_PARTS).filter(p -> !p.equals(part)).toArray(String[]::new);
      noClasses()
          .that(inbox(part))
          .should()
          .dependOnClassesThat(inbox(others))
          .because("the parts are side by side: each uses leaves only")
          .check(RUNTIME);
    }
    String[] above =
        java.util.stream.Stream.concat(
                java.util.Arrays.stream(INBOX_FLOWS), java.util.Arrays.stream(INBOX_PARTS))
            .toArray(String[]::new);
    noClasses()
        .that(inbox(INBOX_LEAVES))
        .should()
        .dependOnClassesThat(inbox(above))
        .because("the handler call, the failure decision and the tracked delivery are leaves")
        .check(RUNTIME);
    noClasses()
        .that(inbox(INBOX_FLOWS))
        .and(
            com.tngtech.archunit.base.DescribedPredicate.not(
                inbox("InboxEngine", "InboxProcessor")))
        .should()
        .dependOnClassesThat(inbox("InboxProcessor"))
        .because("the inline receiver is wired by the engine alone")
        .check(RUNTIME);
  }

  @Test
  void jdbcStatementsLiveBehindTheStorageSeam() {
    java.util.Set<String> seam =
        java.util.Set.of("dev.postbox.runtime.db.Dialect", "dev.postbox.runtime.db.Migrations");
    com.tngtech.archunit.base.DescribedPredicate<com.tngtech.archunit.core.domain.JavaClass>
        behindTheSeam =
            com.tngtech.archunit.base.DescribedPredicate.describe(
                "a *Repository, Dialect or Migrations",
                c -> {
                  String top = c.getName().replaceFirst("\\$.*", "");
                  return top.endsWith("Repository") || seam.contains(top);
                });
    noClasses()
        .that(com.tngtech.archunit.base.DescribedPredicate.not(behindTheSeam))
        .should()
        .callMethodWhere(
            com.tngtech.archunit.base.DescribedPredicate.describe(
                "a statement is prepared or created on a JDBC connection",
                call ->
                    call.getTargetOwner().isAssignableTo(java.sql.Connection.class)
                        && java.util.Set.of("prepareStatement", "createStatement", "prepareCall")
                            .contains(call.getName())))
        .because(
            "SQL lives behind one storage seam: a repository per table group, the dialect's"
                + " differences and the migrations")
        .check(RUNTIME);
  }

  @Test
  void aTypeOutsideTheApiIsPublicOnlyWhereJavaRequiresIt() {
    com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes()
        .that()
        .arePublic()
        .and()
        .areTopLevelClasses()
        .and()
        .resideOutsideOfPackage("dev.postbox.runtime.api..")
        .should(
            new com.tngtech.archunit.lang.ArchCondition<com.tngtech.archunit.core.domain.JavaClass>(
                "be used from another runtime package, or be a bean the container instantiates") {
              @Override
              public void check(
                  com.tngtech.archunit.core.domain.JavaClass c,
                  com.tngtech.archunit.lang.ConditionEvents events) {
                boolean usedElsewhere =
                    c.getDirectDependenciesToSelf().stream()
                        .anyMatch(
                            d -> !d.getOriginClass().getPackageName().equals(c.getPackageName()));
                boolean bean =
                    c.getPackageName().equals("dev.postbox.runtime.jakarta")
                        && c.getAnnotations().stream()
                            .map(a -> a.getRawType().getPackageName())
                            .anyMatch(
                                p -> p.startsWith("jakarta.") || p.startsWith("org.eclipse."));
                // crash points: test code in other modules implements it, through ServiceLoader
                boolean testHook =
                    c.isEquivalentTo(dev.postbox.runtime.checkpoint.CheckpointListener.class);
                if (!usedElsewhere && !bean && !testHook) {
                  events.add(
                      com.tngtech.archunit.lang.SimpleConditionEvent.violated(
                          c,
                          c.getName()
                              + " is public, but no other runtime package uses it: make it"
                              + " package-private, or move it to dev.postbox.runtime.api if"
                              + " applications use it"));
                }
              }
            })
        .because(
            "the public surface is dev.postbox.runtime.api; the rest is public only where"
                + " another package of the runtime needs it")
        .check(RUNTIME);
  }
}
